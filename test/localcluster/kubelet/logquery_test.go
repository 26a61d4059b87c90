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

package kubelet

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// TestStoredLogFormat: what the process package stores for a container
// reads back as complete lines with their times and texts (a partial last
// line is not stored).
func TestStoredLogFormat(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "c.log")
	p, err := process.Start(process.Spec{
		Name: "c", Path: "/bin/sh", Args: []string{"-c", `printf 'first line\nsec'; printf 'ond line\nthird\n'; printf partial`},
		LogPath: logPath, Timestamped: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit")
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(b)
	if len(lines) != 3 {
		t.Fatalf("stored %q: want 3 complete lines", b)
	}
	for i, want := range []string{"first line", "second line", "third"} {
		if at, text := logLine(lines[i]); at.IsZero() || text != want {
			t.Errorf("line %d %q: time %s, text %q; want a time and %q", i, lines[i], at, text, want)
		}
	}
}

func TestRenderLog(t *testing.T) {
	stored := []string{
		"2026-11-29T10:00:00.5Z stdout one",
		"2026-11-29T10:00:01Z stderr two",
		"not a stored line",
		"2026-11-29T10:00:02.25Z stdout three",
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, tt := range []struct {
		name string
		q    logQuery
		want string
	}{
		{"all", logQuery{tailLines: -1}, "one\ntwo\nnot a stored line\nthree\n"},
		{"since", logQuery{tailLines: -1, since: at("2026-11-29T10:00:01Z")}, "two\nnot a stored line\nthree\n"},
		{"tail", logQuery{tailLines: 1}, "three\n"},
		{"timestamps", logQuery{tailLines: 2, timestamps: true}, "not a stored line\n2026-11-29T10:00:02.25Z three\n"},
		{"limit", logQuery{tailLines: -1, limitBytes: 5}, "one\nt"},
	} {
		if got := string(renderLog(stored, tt.q)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	now := at("2026-11-29T10:00:10Z")
	q, err := parseLogQuery(url.Values{"sinceSeconds": {"5"}, "tailLines": {"3"}, "timestamps": {"true"}, "follow": {"true"}}, now)
	if err != nil || !q.since.Equal(now.Add(-5*time.Second)) || q.tailLines != 3 || !q.timestamps || !q.follow {
		t.Errorf("parseLogQuery: %+v, %v", q, err)
	}
	for _, bad := range []url.Values{{"sinceTime": {"yesterday"}}, {"tailLines": {"-1"}}, {"limitBytes": {"0"}}} {
		if _, err := parseLogQuery(bad, now); err == nil {
			t.Errorf("parseLogQuery(%v) accepted", bad)
		}
	}
}
