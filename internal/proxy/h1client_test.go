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
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
)

var simpleResponseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
	"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nX-A: 1\r\nX-A: 2\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
	"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-Sp:   padded  \r\nContent-Length: 3\r\n\r\nabc",
	"HTTP/1.1 200 \n\r\nContent-Length:0\r\n\r\n", // bare LF ends net/http's status line
}

// checkSimpleResponse: whenever the simple parser accepts a response,
// http.ReadResponse reads the same status, headers, length, close flag and
// body from the same bytes.
func checkSimpleResponse(t *testing.T, raw []byte) {
	// readSimpleResponse only looks at what is buffered: one fill, which
	// bufio does on the first Peek.
	br := bufio.NewReaderSize(bytes.NewReader(raw), 8<<10)
	_, _ = br.Peek(1)
	got, ok := readSimpleResponse(br, false)
	if !ok {
		if br.Buffered() != min(len(raw), 8<<10) {
			t.Fatalf("%q: a rejected response consumed bytes", raw)
		}
		return
	}
	want, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("simple parser accepted %q, ReadResponse rejects it: %v", raw, err)
	}
	gotBody, gerr := io.ReadAll(got.Body)
	wantBody, werr := io.ReadAll(want.Body)
	if got.StatusCode != want.StatusCode || got.Status != want.Status || got.ContentLength != want.ContentLength ||
		got.Close != want.Close || !reflect.DeepEqual(got.Header, want.Header) || !bytes.Equal(gotBody, wantBody) || (gerr == nil) != (werr == nil) {
		t.Fatalf("%q:\nsimple   %d %q len=%d close=%v %v body=%q err=%v\nnet/http %d %q len=%d close=%v %v body=%q err=%v", raw,
			got.StatusCode, got.Status, got.ContentLength, got.Close, got.Header, gotBody, gerr,
			want.StatusCode, want.Status, want.ContentLength, want.Close, want.Header, wantBody, werr)
	}
}

func TestReadSimpleResponse(t *testing.T) {
	accepted := 0
	for _, raw := range simpleResponseSeeds {
		checkSimpleResponse(t, []byte(raw))
		br := bufio.NewReader(bytes.NewReader([]byte(raw)))
		_, _ = br.Peek(1)
		if _, ok := readSimpleResponse(br, false); ok {
			accepted++
		} else if br.Buffered() != len(raw) {
			t.Errorf("%q: a rejected response consumed bytes", raw)
		}
	}
	if accepted != 5 {
		t.Errorf("simple parser accepted %d of the seeds, want 5 (200/404/close/no reason/padded)", accepted)
	}
}

func FuzzSimpleResponse(f *testing.F) {
	for _, s := range simpleResponseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkSimpleResponse(t, raw) })
}

// readHeadsLikeNetHTTP reads response heads with http.ReadResponse the
// way http.Transport does for a bodiless request (informational answers
// skipped, 101 refused) and reports how many bytes all the heads took.
func readHeadsLikeNetHTTP(raw []byte) (*http.Response, int, error) {
	src := bytes.NewReader(raw)
	br := bufio.NewReader(src)
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			return nil, 0, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, 0, errors.New("101")
		}
		if resp.StatusCode >= 200 {
			return resp, len(raw) - src.Len() - br.Buffered(), nil
		}
	}
}

// checkResponseHeadCap checks that the lean client's head reader with a
// cap of limit bytes accepts exactly what net/http accepts whose heads fit
// in limit bytes together (http.Transport's MaxResponseHeaderBytes rule), and
// reads the same response from it.
func checkResponseHeadCap(t *testing.T, raw []byte, limit int64) {
	want, headLen, werr := readHeadsLikeNetHTTP(raw)
	lim := headLimit{r: bytes.NewReader(raw), max: limit}
	br := bufio.NewReaderSize(&lim, 8<<10)
	got, gerr := readCappedHead(br, &lim, &http.Request{Method: http.MethodGet})
	switch {
	case werr != nil:
		if gerr == nil {
			t.Fatalf("%q (cap %d): lean reader accepted what net/http rejects: %v", raw, limit, werr)
		}
		return
	case int64(headLen) > limit:
		if !errors.Is(gerr, errResponseHeadTooLarge) {
			t.Fatalf("%q: heads of %d bytes over a cap of %d: got %v, want errResponseHeadTooLarge", raw, headLen, limit, gerr)
		}
		return
	case gerr != nil:
		t.Fatalf("%q: heads of %d bytes within a cap of %d rejected: %v", raw, headLen, limit, gerr)
	}
	gotBody, gerr := io.ReadAll(got.Body)
	wantBody, werr := io.ReadAll(want.Body)
	if got.StatusCode != want.StatusCode || got.Status != want.Status || got.ContentLength != want.ContentLength ||
		got.Close != want.Close || !reflect.DeepEqual(got.Header, want.Header) || !bytes.Equal(gotBody, wantBody) || (gerr == nil) != (werr == nil) {
		t.Fatalf("%q (cap %d):\nlean     %d %q len=%d close=%v %v body=%q err=%v\nnet/http %d %q len=%d close=%v %v body=%q err=%v", raw, limit,
			got.StatusCode, got.Status, got.ContentLength, got.Close, got.Header, gotBody, gerr,
			want.StatusCode, want.Status, want.ContentLength, want.Close, want.Header, wantBody, werr)
	}
}

var responseHeadSeeds = append([]string{
	"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", 9000) + "\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive,\tClose \r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nConnection: clo\u017fe\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nConnection: close\u00a0\r\nContent-Length: 1\r\n\r\nx",
}, simpleResponseSeeds...)

func TestResponseHeadCapExact(t *testing.T) {
	for _, raw := range responseHeadSeeds {
		_, headLen, err := readHeadsLikeNetHTTP([]byte(raw))
		if err != nil {
			headLen = len(raw)
		}
		for _, limit := range []int64{1, int64(headLen) - 1, int64(headLen), int64(headLen) + 1, 1 << 20} {
			if limit > 0 {
				checkResponseHeadCap(t, []byte(raw), limit)
			}
		}
	}
}

func FuzzResponseHeadCap(f *testing.F) {
	for _, s := range responseHeadSeeds {
		f.Add([]byte(s), uint16(len(s)/2))
		f.Add([]byte(s), uint16(len(s)))
	}
	f.Fuzz(func(t *testing.T, raw []byte, limit uint16) { checkResponseHeadCap(t, raw, int64(limit)+1) })
}

var simpleRequestSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n",
	"GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: a.example:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\nX-A: 1\r\nx-a: 2\r\n\r\n",
	"HEAD /h HTTP/1.1\r\nhost: A.Example\r\nConnection: close\r\n\r\n",
	"GET /%41 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET http://a/b HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\n\r\n",
	"GET //x HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a\r\nBad Name: 1\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: [::1]:80\r\nX-Pad:  v  \r\n\r\n",
	"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /u HTTP/1.1\r\nHost: a\r\nX_Forwarded_For: 1.2.3.4\r\nX-Real_IP: 5\r\n\r\n",
	"GET /k HTTP/1.1\r\nHost: a\r\nConnection: clo\u017fe\r\n\r\n",
	// Bodies: the fast path reads a small one of a plain Content-Length.
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"PUT /p HTTP/1.1\r\nHost: a\r\ncontent-length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"DELETE /d HTTP/1.1\r\nHost: a\r\n\r\n",
	"PATCH /p HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nshort",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 05\r\n\r\nhello",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello",
	// Past leanBodyMaxBytes the body streams (streamedbody.go), up to
	// twelve digits of length; thirteen are net/http's.
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 65537\r\n\r\n",
	"PUT /p HTTP/1.1\r\nHost: a\r\nContent-Length: 70000\r\n\r\nnot all of it\r\nGET / HTTP/1.1\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 999999999999\r\n\r\nx",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000000000\r\n\r\nx",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET /g HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
	"OPTIONS /o HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length:\t7 \r\n\r\nbodybod",
	// One "Expect: 100-continue" on a body is the fast path's to answer
	// (expectcontinue.go); any other expectation, two fields or no body
	// are net/http's.
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
	"PUT /p HTTP/1.1\r\nHost: a\r\nexpect: 100-Continue\r\nContent-Length: 70000\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: teapot\r\n\r\nhello",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue, teapot\r\n\r\nhello",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\nExpect: 100-continue\r\n\r\nhello",
	"GET /g HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
}

// checkSimpleRequest: whenever the simple parser accepts a head, the
// request equals what http.ReadRequest makes of the same bytes.
func checkSimpleRequest(t *testing.T, raw []byte) {
	end, ok := headEnd(raw)
	if !ok || end < 0 || !simpleHead(raw[:end+2]) {
		return
	}
	if bytes.Contains(raw[:end+4], []byte("\n\n")) || bytes.Count(raw[:end+4], []byte("\n")) != bytes.Count(raw[:end+4], []byte("\r\n")) {
		t.Fatalf("%q: the fast path's head holds a bare LF", raw)
	}
	br := bufio.NewReaderSize(bytes.NewReader(raw), 8<<10)
	_, _ = br.Peek(1)
	if br.Buffered() < end+4 {
		return
	}
	got, ok := parseSimpleRequest(br, end+2)
	if !ok {
		if br.Buffered() != len(raw) {
			t.Fatalf("%q: a rejected head consumed bytes", raw)
		}
		return
	}
	if br.Buffered() != len(raw)-end-4 {
		t.Fatalf("%q: consumed %d bytes, want the head's %d", raw, len(raw)-br.Buffered(), end+4)
	}
	want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatalf("simple parser accepted %q, ReadRequest rejects it: %v", raw, err)
	}
	// The fast path drops header fields with "_" in their names, as the
	// request handler does for what net/http parsed.
	dropUnderscoreHeaders(want.Header)
	if got.Method != want.Method || got.URL.Path != want.URL.Path || got.URL.RawQuery != want.URL.RawQuery || got.Host != want.Host ||
		got.RequestURI != want.RequestURI || got.Close != want.Close || got.Proto != want.Proto || !reflect.DeepEqual(got.Header, want.Header) ||
		got.ContentLength != want.ContentLength || len(want.TransferEncoding) > 0 {
		t.Fatalf("%q:\nsimple   %s %q ? %q host=%q close=%v len=%d %v\nnet/http %s %q ? %q host=%q close=%v len=%d te=%v %v", raw,
			got.Method, got.URL.Path, got.URL.RawQuery, got.Host, got.Close, got.ContentLength, got.Header,
			want.Method, want.URL.Path, want.URL.RawQuery, want.Host, want.Close, want.ContentLength, want.TransferEncoding, want.Header)
	}
	// An expectation the fast path answers is one net/http's server
	// answers with a 100 (not a 417, not ignored): the field net/http
	// reads names 100-continue, and the request has a body.
	if ex := got.Header["Expect"]; len(ex) > 0 && (!httpguts.HeaderValuesContainsToken(want.Header["Expect"][:1], "100-continue") || want.ContentLength <= 0) {
		t.Fatalf("%q: the fast path took an expectation net/http does not answer with 100 Continue", raw)
	}
	// The body: what the fast path reads (readFastBody) is what net/http
	// reads, and so is where the next request starts.
	var gotBody []byte
	var gotErr error
	switch {
	case got.ContentLength > leanBodyMaxBytes || len(got.Header["Expect"]) > 0:
		// Streamed (streamedbody.go): read as it comes, to its length.
		sb := newStreamedBody(noDeadlineConn{}, nil, br, got.ContentLength, 0)
		gotBody, gotErr = io.ReadAll(sb)
		sb.finish(0)
	case got.ContentLength > 0:
		fb := readFastBody(noDeadlineConn{}, br, int(got.ContentLength), 0)
		gotBody, gotErr = io.ReadAll(fb)
		fb.release()
	}
	wantBody, wantErr := io.ReadAll(want.Body)
	if !bytes.Equal(gotBody, wantBody) || (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: simple body %q (%v), net/http's %q (%v)", raw, gotBody, gotErr, wantBody, wantErr)
	}
}

// noDeadlineConn is the connection readFastBody sets no deadline on here.
type noDeadlineConn struct{ net.Conn }

func (noDeadlineConn) SetReadDeadline(time.Time) error { return nil }

func TestParseSimpleRequest(t *testing.T) {
	accepted := 0
	for _, raw := range simpleRequestSeeds {
		checkSimpleRequest(t, []byte(raw))
		end := bytes.Index([]byte(raw), []byte("\r\n\r\n"))
		br := bufio.NewReader(bytes.NewReader([]byte(raw)))
		_, _ = br.Peek(1)
		if simpleHead([]byte(raw[:end+2])) {
			if _, ok := parseSimpleRequest(br, end+2); ok {
				accepted++
			}
		}
	}
	if accepted != 17 {
		t.Errorf("simple request parser accepted %d seeds, want 17", accepted)
	}
}

func FuzzSimpleRequest(f *testing.F) {
	for _, s := range simpleRequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkSimpleRequest(t, raw) })
}
