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
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// compressBody is the 10 KiB text the compression backend serves.
var compressBody = strings.Repeat("the quick brown fox jumps over the lazy dog, ", 10<<10/45+1)[:10<<10]

// compressBackend serves compressBody as the query asks: ?type= its
// Content-Type (text/plain), ?len=n the first n bytes, with
// Content-Length; ?encoded=1 gzipped by the backend itself;
// ?etag= an ETag; ?cc= Cache-Control.
func compressBackend(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	body := []byte(compressBody)
	if n, err := strconv.Atoi(q.Get("len")); err == nil && n < len(body) {
		body = body[:n]
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if t := q.Get("type"); t != "" {
		h.Set("Content-Type", t)
	}
	if e := q.Get("etag"); e != "" {
		h.Set("ETag", e)
	}
	if cc := q.Get("cc"); cc != "" {
		h.Set("Cache-Control", cc)
	}
	if q.Get("encoded") == "1" {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = buf.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Accept-Ranges", "bytes")
	_, _ = w.Write(body)
}

// rawClient is an HTTP/1.1 client that neither asks for nor decodes
// compression itself.
func rawClient() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
}

// decode decodes a body of a content coding.
func decode(t *testing.T, coding string, body []byte) string {
	t.Helper()
	var r io.Reader
	switch coding {
	case "":
		return string(body)
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		defer zr.Close()
		r = zr
	default:
		t.Fatalf("unknown coding %q", coding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return string(out)
}

// compressPlane serves compressBackend at "/" with compression c, and
// the backend at "/plain" without.
func compressPlane(t *testing.T, c *snapshot.Compression, handler http.HandlerFunc) (*testPlane, int32) {
	t.Helper()
	b := startBackend(t, "b", false, handler)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		snapshot.Route{ID: "plain", Match: prefix("/plain"), Backends: to("ns/b:80")},
		snapshot.Route{ID: "compressed", Match: prefix("/"), Backends: to("ns/b:80"), Compression: c},
	))
	return p, port
}

// getEncoded sends a request with an Accept-Encoding ("" for none) and returns
// the response with its raw body.
func getEncoded(t *testing.T, c *http.Client, method, url, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading: %v", method, url, err)
	}
	return resp, body
}

func TestCompressionAlgorithms(t *testing.T) {
	p, port := compressPlane(t, &snapshot.Compression{Algorithms: []string{"br", "zstd", "gzip"}, MinBytes: 1024}, compressBackend)
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	c := rawClient()
	cases := []struct {
		accept, want string
	}{
		{"gzip", "gzip"},
		{"br", "br"},
		{"zstd", "zstd"},
		{"gzip, deflate, br, zstd", "br"}, // the server's preference
		{"gzip, zstd", "zstd"},
		{"br;q=0, gzip;q=0.5", "gzip"},
		{"*", "br"},
		{"*, br;q=0", "zstd"},
		{"*;q=0", ""},
		{"identity", ""},
		{"deflate", ""},
		{"GZIP;Q=0.8", "gzip"},
		{"x-gzip", "gzip"},
		{"", ""},
	}
	for _, tc := range cases {
		resp, body := getEncoded(t, c, http.MethodGet, base+"/?etag=%22v1%22", tc.accept)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Accept-Encoding %q: status %d", tc.accept, resp.StatusCode)
		}
		ce := resp.Header.Get("Content-Encoding")
		if ce != tc.want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tc.accept, ce, tc.want)
			continue
		}
		if got := decode(t, ce, body); got != compressBody {
			t.Errorf("Accept-Encoding %q: decoded body of %d bytes differs from the backend's %d", tc.accept, len(got), len(compressBody))
		}
		if got := resp.Header.Values("Vary"); len(got) != 1 || got[0] != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q, want [Accept-Encoding]", tc.accept, got)
		}
		// The server may count a compressed body that fits its buffer.
		wantETag, wantLen, wantRanges := `"v1"`, int64(len(compressBody)), "bytes"
		if ce != "" {
			wantETag, wantLen, wantRanges = `W/"v1"`, -1, ""
			if resp.ContentLength >= 0 {
				wantLen = int64(len(body))
			}
			if len(body) >= len(compressBody)/2 {
				t.Errorf("%s: %d bytes compressed to %d", ce, len(compressBody), len(body))
			}
		}
		if got := resp.Header.Get("ETag"); got != wantETag {
			t.Errorf("Accept-Encoding %q: ETag %q, want %q", tc.accept, got, wantETag)
		}
		if resp.ContentLength != wantLen {
			t.Errorf("Accept-Encoding %q: Content-Length %d, want %d", tc.accept, resp.ContentLength, wantLen)
		}
		if got := resp.Header.Get("Accept-Ranges"); got != wantRanges {
			t.Errorf("Accept-Encoding %q: Accept-Ranges %q, want %q", tc.accept, got, wantRanges)
		}
	}
	// The access log counts the bytes sent: compressed.
	resp, body := getEncoded(t, c, http.MethodGet, base+"/marked", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatal("not compressed")
	}
	testkit.Eventually(t, "the access log line of the compressed request", func() bool {
		return strings.Contains(p.log.String(), "/marked")
	})
	for _, line := range strings.Split(strings.TrimSpace(p.log.String()), "\n") {
		if !strings.Contains(line, "/marked") {
			continue
		}
		var m struct {
			Bytes int64 `json:"bytes_sent"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m.Bytes != int64(len(body)) {
			t.Errorf("access log bytes %d, want the %d compressed bytes sent", m.Bytes, len(body))
		}
	}
}

func TestCompressionPassesThrough(t *testing.T) {
	_, port := compressPlane(t, &snapshot.Compression{Algorithms: []string{"gzip"}, MinBytes: 1024}, compressBackend)
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	c := rawClient()
	cases := []struct {
		what, path string
		method     string
		vary       bool
	}{
		{"already encoded", "/?encoded=1", http.MethodGet, false},
		{"below MinBytes", "/?len=100", http.MethodGet, true},
		{"image/png", "/?type=image/png", http.MethodGet, false},
		{"no-transform", "/?cc=no-transform", http.MethodGet, false},
		{"HEAD", "/", http.MethodHead, true},
		{"a route without compression", "/plain", http.MethodGet, false},
	}
	for _, tc := range cases {
		resp, body := getEncoded(t, c, tc.method, base+tc.path, "gzip")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", tc.what, resp.StatusCode)
		}
		wantCE, want := "", compressBody
		switch tc.what {
		case "already encoded":
			wantCE = "gzip"
		case "below MinBytes":
			want = compressBody[:100]
		case "HEAD":
			want = ""
		}
		if got := resp.Header.Get("Content-Encoding"); got != wantCE {
			t.Errorf("%s: Content-Encoding %q, want %q", tc.what, got, wantCE)
		}
		if got := decode(t, wantCE, body); got != want {
			t.Errorf("%s: body of %d bytes, want the backend's %d", tc.what, len(got), len(want))
		}
		if tc.method == http.MethodGet && resp.ContentLength != int64(len(body)) {
			t.Errorf("%s: Content-Length %d, want %d", tc.what, resp.ContentLength, len(body))
		}
		if got := resp.Header.Get("Vary") == "Accept-Encoding"; got != tc.vary {
			t.Errorf("%s: Vary %q, want Accept-Encoding: %v", tc.what, resp.Header.Get("Vary"), tc.vary)
		}
	}
}

func TestCompressionContentTypes(t *testing.T) {
	_, port := compressPlane(t, &snapshot.Compression{Algorithms: []string{"gzip"}, ContentTypes: []string{"application/x-custom", "font/", "+yaml"}}, compressBackend)
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	c := rawClient()
	for typ, want := range map[string]bool{
		"application/x-custom; charset=utf-8": true,
		"font/woff":                           true,
		"application/foo+yaml":                true,
		"text/plain":                          false,
		"application/json":                    false,
	} {
		resp, _ := getEncoded(t, c, http.MethodGet, base+"/?type="+url.QueryEscape(typ), "gzip")
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != want {
			t.Errorf("%s: compressed %v, want %v", typ, got, want)
		}
	}
	for _, ct := range []string{"", "bad type", "/x"} {
		if _, err := compileCompression(&snapshot.Compression{Algorithms: []string{"gzip"}, ContentTypes: []string{ct}}); err == nil {
			t.Errorf("content type %q compiled, want an error", ct)
		}
	}
	if _, err := compileCompression(&snapshot.Compression{Algorithms: []string{"deflate"}}); err == nil {
		t.Error("algorithm deflate compiled, want an error")
	}
}

func TestCompressionStreams(t *testing.T) {
	// release lets the backend send its second chunk, one token a request.
	release := make(chan struct{})
	first, second := strings.Repeat("event: one\n\n", 20), strings.Repeat("event: two\n\n", 20)
	_, port := compressPlane(t, &snapshot.Compression{Algorithms: []string{"br", "zstd", "gzip"}}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, first)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, second)
	})
	c := rawClient()
	for _, coding := range []string{"gzip", "br", "zstd"} {
		resp, err := func() (*http.Response, error) {
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(int(port))+"/events", nil)
			req.Header.Set("Accept-Encoding", coding)
			return c.Do(req)
		}()
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("Content-Encoding"); got != coding {
			t.Fatalf("Content-Encoding %q, want %q", got, coding)
		}
		var dec io.Reader
		switch coding {
		case "gzip":
			got := make(chan io.Reader, 1)
			go func() { // the gzip reader reads its header at once
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					got <- nil
					return
				}
				got <- zr
			}()
			select {
			case dec = <-got:
			case <-time.After(waitFor):
				t.Fatal("the gzip header did not arrive before the backend finished")
			}
		case "br":
			dec = brotli.NewReader(resp.Body)
		case "zstd":
			zr, err := zstd.NewReader(resp.Body, zstd.WithDecoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			dec = zr
		}
		if dec == nil {
			t.Fatal("no decoder")
		}
		read := make(chan string, 1)
		go func() {
			buf := make([]byte, len(first))
			n, _ := io.ReadFull(dec, buf)
			read <- string(buf[:n])
		}()
		select {
		case got := <-read:
			if got != first {
				t.Errorf("%s: first chunk %q, want %q", coding, got, first)
			}
		case <-time.After(waitFor):
			t.Fatalf("%s: the first chunk did not arrive while the backend held the second", coding)
		}
		release <- struct{}{}
		rest, err := io.ReadAll(dec)
		if err != nil || string(rest) != second {
			t.Errorf("%s: rest %q (%v), want %q", coding, rest, err, second)
		}
		_ = resp.Body.Close()
	}
}

func TestNegotiateEncoding(t *testing.T) {
	all := []string{"br", "zstd", "gzip"}
	cases := []struct {
		accept []string
		algs   []string
		want   string
	}{
		{[]string{"gzip;q=0", "br"}, []string{"gzip", "br"}, "br"},
		{[]string{"gzip;q=0, *"}, []string{"gzip"}, ""},
		{[]string{"gzip;q=0, *"}, all, "br"},
		{[]string{"br;q=0.000, gzip;q=0.001"}, all, "gzip"},
		{[]string{"gzip;q=abc"}, all, ""},
		{[]string{"gzip;q=2"}, all, ""},
		{[]string{" , ,gzip ; q=1 "}, all, "gzip"},
		{[]string{"zstd;level=3"}, all, "zstd"},
		{nil, all, ""},
	}
	for _, tc := range cases {
		if got := negotiateEncoding(tc.accept, tc.algs); got != tc.want {
			t.Errorf("Accept-Encoding %q among %v: %q, want %q", tc.accept, tc.algs, got, tc.want)
		}
	}
}
