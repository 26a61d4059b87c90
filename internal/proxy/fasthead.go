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
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// headVerdict is what the fast path makes of a buffered request head.
type headVerdict int

const (
	headSimple    headVerdict = iota // the fast path serves it
	headNotSimple                    // net/http gets the connection
	headTimedOut                     // the head did not arrive in time
)

// fastMethods are the request methods the fast path serves, each followed
// by the space that ends it on the request line. The body methods among
// them (bodyMethod) may carry a small body of known length.
var fastMethods = [][]byte{[]byte("GET "), []byte("HEAD "), []byte("POST "), []byte("PUT "), []byte("PATCH "), []byte("DELETE ")}

// fastMethodStart tells whether buf starts with a method of fastMethods
// (ok), or is too short to tell yet (more).
func fastMethodStart(buf []byte) (ok, more bool) {
	for _, m := range fastMethods {
		if bytes.HasPrefix(buf, m) {
			return true, false
		}
		if len(buf) < len(m) && bytes.HasPrefix(m, buf) {
			more = true
		}
	}
	return false, more
}

// bodyMethod reports the methods whose requests the fast path reads a
// body for and the lean client sends one with (leanbody.go).
func bodyMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// scanHead waits for a whole request head and reports whether it is one
// the fast path serves: a method of fastMethods, HTTP/1.1, CRLF line
// endings only, no Transfer-Encoding, no Upgrade (a Content-Length and an
// Expect are parseSimpleRequest's to check). It hands off at the
// first byte that rules the head out, so net/http answers malformed heads
// at once.
func (fs *fastServer) scanHead(br *bufio.Reader, fc *fastConn, deadline time.Time) (int, headVerdict) {
	partial := false
	for {
		buf, _ := br.Peek(br.Buffered())
		switch ok, more := fastMethodStart(buf); {
		case ok:
			end, ok := headEnd(buf)
			if !ok {
				return 0, headNotSimple
			}
			if end >= 0 {
				if simpleHead(buf[:end+2]) {
					return end + 2, headSimple
				}
				return 0, headNotSimple
			}
		case more:
			// Too short to tell yet.
		default:
			return 0, headNotSimple
		}
		if br.Buffered() >= br.Size() {
			return 0, headNotSimple // a large head: net/http applies its own limits
		}
		if !partial {
			// The head arrives in pieces: bound the wait as net/http's
			// ReadHeaderTimeout does, once per request.
			partial = true
			_ = fc.nc.SetReadDeadline(deadline)
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return 0, headTimedOut
			}
			return 0, headNotSimple // let net/http produce the error answer
		}
	}
}

// headEnd finds the CRLF CRLF that ends a head (-1 while it has not
// arrived). ok is false when a bare CR or LF comes first: such a head is
// not the fast path's to parse. It looks for each line's end with
// bytes.IndexByte rather than byte by byte (TestHeadEndEqualsByteWalk
// holds it to the byte walk it replaced).
func headEnd(buf []byte) (int, bool) {
	for i := 0; ; {
		rest := buf[i:]
		cr, lf := bytes.IndexByte(rest, '\r'), bytes.IndexByte(rest, '\n')
		switch {
		case cr < 0 && lf < 0:
			return -1, true
		case cr < 0 || (lf >= 0 && lf < cr):
			return 0, false // a bare LF
		case lf != cr+1:
			if cr+1 == len(rest) {
				return -1, true // the LF may follow
			}
			return 0, false // a bare CR
		}
		p := i + cr // a CRLF at p
		if p+3 < len(buf) && buf[p+2] == '\r' && buf[p+3] == '\n' {
			return p, true
		}
		if p+2 < len(buf) && buf[p+2] == '\n' {
			return 0, false
		}
		i = p + 2
	}
}

// simpleHead checks the request line's version and the header names.
func simpleHead(head []byte) bool {
	line, rest, ok := bytes.Cut(head, []byte("\r\n"))
	if !ok || !bytes.HasSuffix(line, []byte(" HTTP/1.1")) {
		return false
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return false
		}
		switch {
		case asciiEqualFold(name, "transfer-encoding"),
			asciiEqualFold(name, "upgrade"), asciiEqualFold(name, "http2-settings"):
			return false
		}
	}
	return true
}

func asciiEqualFold[T string | []byte](b T, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// parseSimpleRequest builds the request of a simple head (see simpleHead)
// without http.ReadRequest's general machinery: an origin-form target
// without escapes, valid token header names, plain values, one Host, and
// for a body method at most one Content-Length of plain digits
// (ContentLength is set; the body is the caller's to read), and an
// Expect only as one "100-continue" on a request with a body
// (expectcontinue.go). Anything else returns ok=false with nothing
// consumed, for http.ReadRequest. head ends with the CRLF of the last
// header line.
func parseSimpleRequest(br *bufio.Reader, headLen int) (*http.Request, bool) {
	buf, _ := br.Peek(headLen)
	s := string(buf) // one allocation backs every field
	line := s[:strings.Index(s, "\r\n")]
	method, target, ok := parseSimpleRequestLine(line)
	if !ok {
		return nil, false
	}
	f, ok := parseRequestFields(s[len(line)+2:])
	if !ok || f.hosts != 1 || f.host == "" || !validHostHeader(f.host) {
		return nil, false
	}
	var length int64
	if f.lengths > 0 {
		if f.lengths > 1 || !bodyMethod(method) {
			return nil, false
		}
		if length, ok = parseSimpleContentLength(f.length); !ok {
			return nil, false
		}
	}
	if f.expects > 0 && (f.expects > 1 || length == 0 || !expectsContinue(f.expect)) {
		return nil, false // net/http ignores it, or answers 417
	}
	_, _ = br.Discard(headLen + 2)
	path, query, _ := strings.Cut(target, "?")
	return &http.Request{
		Method:        method,
		URL:           &url.URL{Path: path, RawQuery: query},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        f.h,
		Body:          http.NoBody,
		ContentLength: length,
		Host:          f.host,
		RequestURI:    target,
		Close:         f.closeConn,
	}, true
}

// parseSimpleRequestLine reads a simple request line: GET or HEAD, an
// origin-form target of plain characters (no escapes, no fragment),
// HTTP/1.1.
func parseSimpleRequestLine(line string) (method, target string, ok bool) {
	sp1 := strings.IndexByte(line, ' ')
	sp2 := strings.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 <= sp1+1 || line[sp2+1:] != "HTTP/1.1" {
		return "", "", false
	}
	method, target = line[:sp1], line[sp1+1:sp2]
	if method != http.MethodGet && method != http.MethodHead && !bodyMethod(method) {
		return "", "", false
	}
	if target[0] != '/' || (len(target) > 1 && target[1] == '/') {
		return "", "", false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f || c == '%' || c == '#' {
			return "", "", false
		}
	}
	return method, target, true
}

// requestFields is what parseRequestFields reads from the field lines of
// a simple request.
type requestFields struct {
	h         http.Header
	host      string
	hosts     int // how many Host fields came
	closeConn bool
	// length is the last Content-Length value; lengths counts them.
	length  string
	lengths int
	// expect is the last Expect value; expects counts them.
	expect  string
	expects int
}

// parseRequestFields reads the field lines of a simple request (each ends
// with CRLF). Host goes apart from the header; names holding "_" are
// dropped, as nginx's underscores_in_headers off does.
func parseRequestFields(rest string) (requestFields, bool) {
	lines := strings.Count(rest, "\r\n")
	f := requestFields{h: make(http.Header, lines)}
	vals := make([]string, lines)
	for i := 0; i < lines; i++ {
		var l string
		l, rest, _ = strings.Cut(rest, "\r\n")
		name, v, canonical, ok := parseFieldLine(l)
		if !ok {
			return f, false
		}
		if strings.IndexByte(name, '_') >= 0 {
			continue
		}
		key := canonicalKey(name, canonical)
		switch key {
		case "Host":
			f.host, f.hosts = v, f.hosts+1
			continue
		case "Connection":
			// ASCII case folding, as net/http's token match ("cloſe" is
			// not "close").
			f.closeConn = f.closeConn || hasCloseToken(v)
		case "Content-Length":
			f.length, f.lengths = v, f.lengths+1
		case "Expect":
			f.expect, f.expects = v, f.expects+1
		}
		addFieldValue(f.h, vals, i, key, v)
	}
	return f, true
}

// parseSimpleContentLength reads a Content-Length the fast path serves:
// plain decimal digits without a leading zero (but "0"), at most
// streamBodyMaxDigits of them (a body over leanBodyMaxBytes streams,
// streamedbody.go). Anything else is net/http's to judge.
func parseSimpleContentLength(v string) (int64, bool) {
	if v == "" || len(v) > streamBodyMaxDigits || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// validHostHeader accepts the characters of a reg-name, IPv4 or bracketed
// IPv6 host with an optional port; net/http applies the full rules to
// anything else.
func validHostHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_':
		default:
			return false
		}
	}
	return true
}
