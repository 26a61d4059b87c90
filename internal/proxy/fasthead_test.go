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
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// headEndByteWalk is the byte-by-byte headEnd that the IndexByte one
// replaced, kept as its reference.
func headEndByteWalk(buf []byte) (int, bool) {
	for i := 0; i < len(buf); i++ {
		switch buf[i] {
		case '\n':
			return 0, false
		case '\r':
			if i+1 == len(buf) {
				return -1, true
			}
			if buf[i+1] != '\n' {
				return 0, false
			}
			if i+3 < len(buf) && buf[i+2] == '\r' && buf[i+3] == '\n' {
				return i, true
			}
			if i+2 < len(buf) && buf[i+2] == '\n' {
				return 0, false
			}
			i++ // past the LF
		}
	}
	return -1, true
}

// TestHeadEndEqualsByteWalk compares headEnd with the byte walk on every
// string of up to 10 bytes over CR, LF and a letter, and on a few heads.
func TestHeadEndEqualsByteWalk(t *testing.T) {
	alphabet := []byte{'\r', '\n', 'a'}
	check := func(buf []byte) {
		t.Helper()
		gotEnd, gotOK := headEnd(buf)
		wantEnd, wantOK := headEndByteWalk(buf)
		if gotEnd != wantEnd || gotOK != wantOK {
			t.Fatalf("headEnd(%q) = %d, %v; the byte walk says %d, %v", buf, gotEnd, gotOK, wantEnd, wantOK)
		}
	}
	buf := make([]byte, 0, 10)
	var walk func()
	walk = func() {
		check(buf)
		if len(buf) == cap(buf) {
			return
		}
		for _, c := range alphabet {
			buf = append(buf, c)
			walk()
			buf = buf[:len(buf)-1]
		}
	}
	walk()
	for _, head := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: b\r",
		"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\rX: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\n",
		"GET / HTTP/1.1\r\nHost: " + strings.Repeat("a", 300) + "\r\n\r\n",
	} {
		check([]byte(head))
	}
}

// TestParseFieldLineCanonical holds parseFieldLine's canonical flag to
// http.CanonicalHeaderKey: the flag is set exactly when the name is its
// own canonical form, and canonicalKey always gives that form.
func TestParseFieldLineCanonical(t *testing.T) {
	for _, name := range []string{
		"Host", "host", "HOST", "Content-Length", "content-length", "Content-length", "X-Bench-Header-01",
		"X-bench-Header", "X--Y", "-X", "X-", "A", "a", "Www-Authenticate", "WWW-Authenticate", "X_Y",
		"X-9z", "X-9Z", "1-A", "1a", "!#$%&'*+-.^_`|~", "X-ÿ", "X-Ä",
	} {
		gotName, v, canonical, ok := parseFieldLine(name + ": v ")
		if !ok {
			if !strings.ContainsFunc(name, func(r rune) bool { return r > 0x7e }) {
				t.Errorf("parseFieldLine(%q) refused a token name", name)
			}
			continue
		}
		want := http.CanonicalHeaderKey(name)
		if gotName != name || v != "v" || canonical != (want == name) || canonicalKey(gotName, canonical) != want {
			t.Errorf("parseFieldLine(%q) = %q, %q, canonical %v, key %q; CanonicalHeaderKey is %q",
				name, gotName, v, canonical, canonicalKey(gotName, canonical), want)
		}
	}
}

// BenchmarkParseSimpleRequest reads the head of bench/shapes.sh's
// headers-30 shape: wrk's own fields and 30 more of about 60 bytes.
func BenchmarkParseSimpleRequest(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("GET / HTTP/1.1\r\nHost: bench.local:8080\r\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&sb, "X-Bench-Header-%02d: value-%02d-0123456789abcdefghijklmnopqrstuvw\r\n", i, i)
	}
	sb.WriteString("\r\n")
	head := []byte(sb.String())
	rd := bytes.NewReader(head)
	br := bufio.NewReaderSize(rd, 8192)
	b.ReportAllocs()
	b.SetBytes(int64(len(head)))
	for b.Loop() {
		rd.Reset(head)
		br.Reset(rd)
		_, _ = br.Peek(len(head))
		buf, _ := br.Peek(br.Buffered())
		end, ok := headEnd(buf)
		if !ok || end < 0 || !simpleHead(buf[:end+2]) {
			b.Fatal("not a simple head")
		}
		if _, ok := parseSimpleRequest(br, end+2); !ok {
			b.Fatal("not parsed")
		}
	}
}
