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
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// readCappedHead reads the response heads of one exchange within the
// head limit, then lifts the limit for the body. bufio and textproto can
// swallow the limit's error behind a partial line, so an exhausted budget
// is what reports a head that is too large (as in http.Transport).
func readCappedHead(br *bufio.Reader, lim *headLimit, mreq *http.Request) (*http.Response, error) {
	lim.arm()
	resp, err := readResponseHead(br, mreq)
	if err != nil {
		if lim.exhausted() && !errors.Is(err, errResponseHeadTooLarge) {
			// %v, not %w: a truncated head must not look like a stale
			// connection (io.ErrUnexpectedEOF) and be retried.
			err = fmt.Errorf("%w: more than %d bytes (%v)", errResponseHeadTooLarge, lim.max, err) //nolint:errorlint // %v on purpose, see above
		}
		return nil, err
	}
	lim.disarm()
	return resp, nil
}

// readResponseHead reads the final response head of a bodiless request,
// skipping informational answers. The head limit is armed by the caller.
func readResponseHead(br *bufio.Reader, mreq *http.Request) (*http.Response, error) {
	// Wait for the first bytes, then take the simple path when the whole
	// head is there and qualifies.
	if _, err := br.Peek(1); err == nil {
		if resp, ok := readSimpleResponse(br, mreq.Method == http.MethodHead); ok {
			resp.Request = mreq
			return resp, nil
		}
	}
	for {
		resp, err := http.ReadResponse(br, mreq)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return nil, errors.New("upstream switched protocols without an upgrade request")
			}
			continue // informational answers are not forwarded
		}
		return resp, nil
	}
}

// readSimpleResponse parses the common upstream answer without
// http.ReadResponse's general machinery: an HTTP/1.1 head already in the
// buffer, a final status with a body, exactly one numeric Content-Length,
// no Transfer-Encoding, no folded lines. Anything else returns ok=false
// with nothing consumed, for http.ReadResponse.
func readSimpleResponse(br *bufio.Reader, head bool) (*http.Response, bool) {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, false
	}
	raw := buf[:end+2]
	line, _, _ := bytes.Cut(raw, []byte("\r\n"))
	code, ok := simpleStatus(line)
	if !ok {
		return nil, false
	}
	s := string(raw) // one allocation backs every name and value
	f, ok := parseResponseFields(s[len(line)+2:])
	if !ok || f.contentLength < 0 {
		return nil, false
	}
	if f.closeConn {
		delete(f.h, "Connection") // as net/http does once it has noted the close
	}
	_, _ = br.Discard(end + 4)
	resp := &http.Response{
		Status:        s[9:len(line)],
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        f.h,
		ContentLength: f.contentLength,
		Close:         f.closeConn,
		Body:          http.NoBody,
	}
	if !head && f.contentLength > 0 {
		resp.Body = &lengthBody{br: br, left: f.contentLength}
	}
	return resp, true
}

// simpleStatus reads the status line of a simple response: HTTP/1.1, a
// final status that has a body, a reason phrase net/http reads the same.
func simpleStatus(line []byte) (int, bool) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || (len(line) > 12 && line[12] != ' ') {
		return 0, false
	}
	for _, c := range line[12:] {
		// reason-phrase = *( HTAB / SP / VCHAR / obs-text ); a bare LF
		// would end the line for net/http and shift the whole head.
		if (c < ' ' && c != '\t') || c == 0x7f {
			return 0, false
		}
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return 0, false
	}
	return code, true
}

// responseFields is what parseResponseFields reads from the field lines
// of a simple response.
type responseFields struct {
	h             http.Header
	contentLength int64 // -1 when absent
	closeConn     bool
}

// parseResponseFields reads the field lines of a simple response (each
// ends with CRLF): no Transfer-Encoding, at most one Content-Length.
func parseResponseFields(rest string) (responseFields, bool) {
	lines := strings.Count(rest, "\r\n")
	f := responseFields{h: make(http.Header, lines), contentLength: -1}
	vals := make([]string, lines)
	for i := 0; i < lines; i++ {
		var l string
		l, rest, _ = strings.Cut(rest, "\r\n")
		name, v, canonical, ok := parseFieldLine(l)
		if !ok {
			return f, false
		}
		key := canonicalKey(name, canonical)
		switch key {
		case "Transfer-Encoding":
			return f, false
		case "Content-Length":
			n, ok := parseContentLength(v)
			if f.contentLength >= 0 || !ok {
				return f, false
			}
			f.contentLength = n
		case "Connection":
			f.closeConn = f.closeConn || hasCloseToken(v)
		}
		addFieldValue(f.h, vals, i, key, v)
	}
	return f, true
}

// parseContentLength reads a Content-Length of at most 18 digits.
func parseContentLength(v string) (int64, bool) {
	if v == "" || len(v) > 18 {
		return 0, false
	}
	n := int64(0)
	for j := 0; j < len(v); j++ {
		if v[j] < '0' || v[j] > '9' {
			return 0, false
		}
		n = n*10 + int64(v[j]-'0')
	}
	return n, true
}

// hasCloseToken reports whether a Connection value lists "close", by
// net/http's rules: comma-separated, trimmed of spaces and tabs, compared
// ASCII case-insensitively (no Unicode folding: "cloſe" is not "close").
func hasCloseToken(v string) bool {
	for f := range strings.SplitSeq(v, ",") {
		f = strings.Trim(f, " \t")
		if len(f) != len("close") {
			continue
		}
		match := true
		for i := 0; i < len(f); i++ {
			if c := f[i]; c != "close"[i] && c != "CLOSE"[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// lengthBody reads exactly a Content-Length body from the connection.
type lengthBody struct {
	br   *bufio.Reader
	left int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *lengthBody) Close() error { return nil }
