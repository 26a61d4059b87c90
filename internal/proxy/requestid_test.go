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

package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestRequestID: a client's X-Request-Id reaches the upstream and the
// access log as it came; without one (or with an unusable one) the proxy
// makes one up, sends it upstream and logs it, on the fast path and
// net/http's alike.
func TestRequestID(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)}, snapshot.Route{ID: "r", Backends: to("ns/b:80")}))
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	c := client()
	logged := func() string {
		lines := strings.Split(strings.TrimSpace(p.log.String()), "\n")
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(m["request_id"])
	}
	res := fetch(t, c, url, "X-Request-Id", "abc-123")
	if got := res.echo.Header.Get("X-Request-Id"); got != "abc-123" || logged() != "abc-123" {
		t.Errorf("client id: upstream %q, logged %q, want abc-123 both", got, logged())
	}
	seen := map[string]bool{}
	for _, hdr := range [][]string{nil, {"X-Request-Id", "has space"}, {"X-Request-Id", strings.Repeat("x", 200)}} {
		res := fetch(t, c, url, hdr...)
		got := res.echo.Header.Get("X-Request-Id")
		if len(got) != 32 || seen[got] || logged() != got || len(res.echo.Header["X-Request-Id"]) != 1 {
			t.Errorf("made-up id for %v: upstream %q (%d values), logged %q, want one new 32-hex id", hdr, got, len(res.echo.Header["X-Request-Id"]), logged())
		}
		seen[got] = true
	}
}
