/*
Copyright 2026 The Coxswain Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package status

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDataPlaneProgrammedConditions(t *testing.T) {
	tests := []struct {
		name string
		got  metav1.Condition
		want string
	}{
		{"acked by one", ProgrammedAcked("gateway/apps/web", 1, 1, 3),
			"True/Programmed/3: 1 of 1 proxy of scope gateway/apps/web bound this Gateway's ports and acked its generation 3"},
		{"acked by three", ProgrammedAcked("shared", 3, 3, 7),
			"True/Programmed/7: 3 of 3 proxies of scope shared bound this Gateway's ports and acked its generation 7"},
		{"not published", ProgrammedPending("shared", false, 0, 0, 2),
			"False/Pending/2: Waiting for the data plane: no published snapshot of scope shared holds this Gateway yet"},
		{"no proxy", ProgrammedPending("shared", true, 0, 0, 2),
			"False/Pending/2: Waiting for the data plane: no proxy of scope shared is connected"},
		{"one of two awaited", ProgrammedPending("shared", true, 1, 2, 2),
			"False/Pending/2: Waiting for 1 of 2 proxies of scope shared to bind this Gateway's ports and ack its generation 2"},
		{"rejected", ProgrammedRejected("shared", 2, 3, 4, "proxy-a", "listen :80: permission denied"),
			"False/SnapshotRejected/4: 2 of 3 proxies of scope shared rejected the snapshot holding generation 4; proxy proxy-a said: listen :80: permission denied"},
	}
	for _, tt := range tests {
		c := tt.got
		if c.Type != TypeProgrammed {
			t.Fatalf("%s: type %s", tt.name, c.Type)
		}
		got := string(c.Status) + "/" + c.Reason + "/" + itoa(c.ObservedGeneration) + ": " + c.Message
		if got != tt.want {
			t.Errorf("%s:\n got: %s\nwant: %s", tt.name, got, tt.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestTruncateDetail(t *testing.T) {
	short := "bind: address already in use"
	if got := TruncateDetail(short); got != short {
		t.Fatalf("a short detail is kept whole, got %q", got)
	}
	// 511 ASCII bytes then a 3-byte rune straddling the cap.
	long := strings.Repeat("x", MaxDetail-1) + "€" + strings.Repeat("y", 100)
	got := TruncateDetail(long)
	if !utf8.ValidString(got) {
		t.Fatalf("truncation split a rune: %q", got[len(got)-20:])
	}
	if want := strings.Repeat("x", MaxDetail-1) + "… (truncated)"; got != want {
		t.Fatalf("truncated to %d bytes ending %q, want %d bytes", len(got), got[len(got)-20:], len(want))
	}
}
