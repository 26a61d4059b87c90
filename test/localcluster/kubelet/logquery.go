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
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// logQuery is the parsed query of a container-logs request.
type logQuery struct {
	since      time.Time // zero: from the start
	tailLines  int       // < 0: all
	timestamps bool
	limitBytes int64 // 0: no limit
	follow     bool
}

func parseLogQuery(q url.Values, now time.Time) (logQuery, error) {
	lq := logQuery{tailLines: -1}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return lq, fmt.Errorf("sinceTime: %w", err)
		}
		lq.since = t
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return lq, fmt.Errorf("sinceSeconds: %q", v)
		}
		lq.since = now.Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return lq, fmt.Errorf("tailLines: %q", v)
		}
		lq.tailLines = n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return lq, fmt.Errorf("limitBytes: %q", v)
		}
		lq.limitBytes = n
	}
	lq.timestamps = q.Get("timestamps") == "true" || q.Get("timestamps") == "1"
	lq.follow = q.Get("follow") == "true" || q.Get("follow") == "1"
	return lq, nil
}

// logLine splits a stored line into its time and text. Lines not in the
// stored format keep the zero time and their whole text.
func logLine(line string) (time.Time, string) {
	ts, rest, ok := strings.Cut(line, " ")
	if !ok {
		return time.Time{}, line
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, line
	}
	if _, text, ok := strings.Cut(rest, " "); ok && (strings.HasPrefix(rest, "stdout ") || strings.HasPrefix(rest, "stderr ")) {
		return t, text
	}
	return t, rest
}

// renderLog selects and formats stored lines for a query.
func renderLog(lines []string, q logQuery) []byte {
	var out []string
	for _, l := range lines {
		t, text := logLine(l)
		if !q.since.IsZero() && !t.IsZero() && t.Before(q.since) {
			continue
		}
		if q.timestamps && !t.IsZero() {
			text = t.Format(time.RFC3339Nano) + " " + text
		}
		out = append(out, text)
	}
	if q.tailLines >= 0 && len(out) > q.tailLines {
		out = out[len(out)-q.tailLines:]
	}
	var b bytes.Buffer
	for _, l := range out {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if q.limitBytes > 0 && int64(b.Len()) > q.limitBytes {
		b.Truncate(int(q.limitBytes))
	}
	return b.Bytes()
}

func splitLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
