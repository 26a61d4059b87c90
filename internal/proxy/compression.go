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
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Response compression (snapshot.Compression). A route with compression
// wraps the exchange's writer around the forward (serve.go, handle): the
// encoding is negotiated from the request's Accept-Encoding, in the
// server's order of preference among the route's algorithms (the first
// the client accepts with q > 0, "*" covering those it does not name),
// and decided once the response header is known (WriteHeader). A response
// is compressed when it is a 200 to a method other than HEAD, without a
// Content-Encoding (never twice), of an eligible Content-Type, without
// Cache-Control no-transform, and declares no Content-Length below
// MinBytes (a body of unknown length is compressed; an empty one is not).
// A compressed response loses its Content-Length and Accept-Ranges, gets
// Content-Encoding, and its strong ETag becomes weak. Vary:
// Accept-Encoding is added to every response of an eligible type not
// encoded already and without no-transform, compressed or not (a client
// that accepts none of the encodings, a HEAD, a small body, another
// status), so caches keep the representations apart.
//
// The encoders are pooled: gzip (level compressionGzipLevel), brotli
// (quality compressionBrotliQuality), zstd (fastest level, 1 MiB window,
// synchronous). A flush of the response (streamed bodies, SSE, which
// copyResponse flushes chunk by chunk) flushes the encoder first. The
// exchange counts the compressed bytes sent, not those compressed.

// compressionGzipLevel and compressionBrotliQuality trade ratio for
// speed, as a proxy compressing on the fly should.
const (
	compressionGzipLevel     = 5
	compressionBrotliQuality = 4
	compressionZstdWindow    = 1 << 20
)

// The content codings (Content-Encoding values).
const (
	codingGzip   = "gzip"
	codingBrotli = "br"
	codingZstd   = "zstd"
)

// defaultCompressTypes are the media types compressed when a policy names
// none.
var defaultCompressTypes = compressTypes{
	exact:    []string{"application/json", "application/javascript", "application/xml", "image/svg+xml", "application/wasm"},
	prefixes: []string{"text/"},
	suffixes: []string{"+json", "+xml"},
}

// compressionPolicy is a route's compiled snapshot.Compression.
type compressionPolicy struct {
	// algorithms are the codings, most preferred first.
	algorithms []string
	minBytes   int64
	types      compressTypes
}

// compressTypes are the eligible media types: exact ones, type prefixes
// ("text/") and structured syntax suffixes ("+json").
type compressTypes struct {
	all      bool
	exact    []string
	prefixes []string
	suffixes []string
}

// compileCompression validates a route's compression: known algorithms
// (none means br, zstd, gzip), a non-negative MinBytes, content types of
// the forms "type/subtype", "type/", "type/*", "+suffix" or "*/*".
func compileCompression(in *snapshot.Compression) (*compressionPolicy, error) {
	if in == nil {
		return nil, nil
	}
	if in.MinBytes < 0 {
		return nil, fmt.Errorf("compression: minBytes %d must not be negative", in.MinBytes)
	}
	p := &compressionPolicy{minBytes: in.MinBytes, types: defaultCompressTypes}
	algs := in.Algorithms
	if len(algs) == 0 {
		algs = []string{codingBrotli, codingZstd, codingGzip}
	}
	for _, a := range algs {
		a = strings.ToLower(strings.TrimSpace(a))
		switch a {
		case codingGzip, codingBrotli, codingZstd:
		default:
			return nil, fmt.Errorf("compression: algorithm %q is unknown (br, zstd, gzip)", a)
		}
		if !containsString(p.algorithms, a) {
			p.algorithms = append(p.algorithms, a)
		}
	}
	if len(in.ContentTypes) > 0 {
		t, err := compileCompressTypes(in.ContentTypes)
		if err != nil {
			return nil, fmt.Errorf("compression: %w", err)
		}
		p.types = t
	}
	return p, nil
}

// compileCompressTypes sorts content types into their forms.
func compileCompressTypes(in []string) (compressTypes, error) {
	var t compressTypes
	for _, ct := range in {
		ct = strings.ToLower(strings.TrimSpace(ct))
		typ, sub, ok := strings.Cut(ct, "/")
		switch {
		case ct == "*/*" || ct == "*":
			t.all = true
		case strings.HasPrefix(ct, "+") && snapshot.ValidToken(ct[1:]):
			t.suffixes = append(t.suffixes, ct)
		case ok && snapshot.ValidToken(typ) && (sub == "" || sub == "*"):
			t.prefixes = append(t.prefixes, typ+"/")
		case ok && snapshot.ValidToken(typ) && snapshot.ValidToken(sub):
			t.exact = append(t.exact, ct)
		default:
			return compressTypes{}, fmt.Errorf("content type %q is not a media type, type prefix or +suffix", ct)
		}
	}
	return t, nil
}

// containsString reports whether ss holds s.
func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// matches reports whether a Content-Type value is eligible.
func (t *compressTypes) matches(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "" {
		return false
	}
	if t.all {
		return true
	}
	for _, e := range t.exact {
		if mt == e {
			return true
		}
	}
	for _, pfx := range t.prefixes {
		if strings.HasPrefix(mt, pfx) {
			return true
		}
	}
	for _, s := range t.suffixes {
		if strings.HasSuffix(mt, s) {
			return true
		}
	}
	return false
}

// wrap makes ex compress what the route answers, when r accepts it; the
// returned finish must be called once the answer is written. A request to
// upgrade the connection is left alone.
func (p *compressionPolicy) wrap(ex *exchange, r *http.Request) (finish func()) {
	if p == nil || len(r.Header["Upgrade"]) > 0 {
		return func() {}
	}
	cw := &compressWriter{
		w:      ex.w,
		p:      p,
		coding: negotiateEncoding(r.Header["Accept-Encoding"], p.algorithms),
		head:   r.Method == http.MethodHead,
	}
	ex.w = cw
	return func() { cw.finish(ex) }
}

// negotiateEncoding is the first of algorithms the Accept-Encoding values
// accept (RFC 9110 §12.5.3): named with q > 0, or not named while "*"
// has q > 0 ("x-gzip" names gzip); "" when none.
func negotiateEncoding(accept []string, algorithms []string) string {
	if len(accept) == 0 {
		return ""
	}
	// A policy has at most the three codings.
	var weights [3]struct {
		named bool
		q     float64
	}
	algorithms = algorithms[:min(len(algorithms), len(weights))]
	star := -1.0
	for _, v := range accept {
		for v != "" {
			var elem string
			elem, v, _ = strings.Cut(v, ",")
			coding, weight, ok := parseCoding(elem)
			switch {
			case !ok:
				continue
			case coding == "*":
				star = weight
				continue
			case strings.EqualFold(coding, "x-gzip"):
				coding = codingGzip
			}
			for i, a := range algorithms {
				if strings.EqualFold(coding, a) {
					weights[i].named, weights[i].q = true, weight
				}
			}
		}
	}
	for i, a := range algorithms {
		if w := weights[i]; (w.named && w.q > 0) || (!w.named && star > 0) {
			return a
		}
	}
	return ""
}

// parseCoding parses one Accept-Encoding element, "coding[;q=x]"; false
// for an empty one or an invalid weight.
func parseCoding(elem string) (coding string, q float64, ok bool) {
	coding, params, _ := strings.Cut(elem, ";")
	coding = strings.TrimSpace(coding)
	if coding == "" {
		return "", 0, false
	}
	q = 1
	for params != "" {
		var param string
		param, params, _ = strings.Cut(params, ";")
		name, val, _ := strings.Cut(param, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || f < 0 || f > 1 {
			return "", 0, false
		}
		q = f
	}
	return coding, q, true
}

// compressWriter is the response writer of a route with compression: it
// decides at WriteHeader, then passes the body through or compresses it.
type compressWriter struct {
	w      http.ResponseWriter
	p      *compressionPolicy
	coding string
	head   bool

	decided bool
	enc     encoder
	// in counts the bytes the exchange wrote, out those sent to w.
	in, out int64
	err     error
}

// Header is the underlying writer's.
func (c *compressWriter) Header() http.Header { return c.w.Header() }

// WriteHeader decides whether to compress (informational answers other
// than 101 pass through undecided).
func (c *compressWriter) WriteHeader(code int) {
	if code < 200 && code != http.StatusSwitchingProtocols {
		c.w.WriteHeader(code)
		return
	}
	if c.decided {
		return
	}
	c.decided = true
	if c.decide(code) {
		c.enc = getEncoder(c.coding, countingWriter{c})
	}
	c.w.WriteHeader(code)
}

// decide applies the rules of the file comment to the response header:
// true to compress, after setting the header for it. Vary is added to
// every response of an eligible type that may be compressed at all (not
// encoded already, no no-transform), whichever its status, size, method
// or the client's encodings.
func (c *compressWriter) decide(code int) bool {
	h := c.w.Header()
	if code == http.StatusSwitchingProtocols || !c.p.types.matches(headerFirst(h, "Content-Type")) ||
		len(h["Content-Encoding"]) > 0 || hasToken(h["Cache-Control"], "no-transform") {
		return false
	}
	if !hasToken(h["Vary"], "accept-encoding") && !hasToken(h["Vary"], "*") {
		h["Vary"] = append(h["Vary"], "Accept-Encoding")
	}
	if code != http.StatusOK || c.coding == "" || c.head || encoderPool(c.coding) == nil {
		return false
	}
	if cl := h["Content-Length"]; len(cl) == 1 {
		if n, err := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64); err == nil && (n == 0 || n < c.p.minBytes) {
			return false
		}
	}
	delete(h, "Content-Length")
	delete(h, "Accept-Ranges")
	h["Content-Encoding"] = []string{c.coding}
	if et := h["Etag"]; len(et) == 1 && strings.HasPrefix(et[0], `"`) {
		h["Etag"] = []string{"W/" + et[0]}
	}
	return true
}

// Write compresses p, or passes it through.
func (c *compressWriter) Write(p []byte) (int, error) {
	if !c.decided {
		c.WriteHeader(http.StatusOK)
	}
	if c.enc == nil {
		n, err := c.w.Write(p)
		c.in += int64(n)
		c.out += int64(n)
		return n, err
	}
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.enc.Write(p)
	c.in += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}

// Flush pushes what the encoder holds, then flushes the underlying
// writer.
func (c *compressWriter) Flush() {
	if !c.decided {
		c.WriteHeader(http.StatusOK)
	}
	if c.enc != nil && c.err == nil {
		if err := c.enc.Flush(); err != nil {
			c.err = err
		}
	}
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *compressWriter) Unwrap() http.ResponseWriter { return c.w }

// finish ends the compressed stream, returns the encoder to its pool,
// gives ex its writer back and makes its byte count the bytes sent.
func (c *compressWriter) finish(ex *exchange) {
	if c.enc != nil {
		if c.err == nil {
			c.err = c.enc.Close()
		}
		putEncoder(c.coding, c.enc)
		c.enc = nil
	}
	ex.w = c.w
	ex.bytes += c.out - c.in
}

// countingWriter is the encoders' destination: the underlying writer,
// counting what is sent.
type countingWriter struct{ c *compressWriter }

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.c.w.Write(p)
	w.c.out += int64(n)
	return n, err
}

// headerFirst is the first value of a canonical header field.
func headerFirst(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// hasToken reports whether a comma-separated header field holds token
// (case-insensitive; parameters ignored).
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for v != "" {
			var elem string
			elem, v, _ = strings.Cut(v, ",")
			elem, _, _ = strings.Cut(elem, "=")
			if strings.EqualFold(strings.TrimSpace(elem), token) {
				return true
			}
		}
	}
	return false
}

// encoder is a pooled streaming compressor.
type encoder interface {
	io.Writer
	Flush() error
	Close() error
	Reset(w io.Writer)
}

// The encoders' pools, by coding.
var (
	gzipPool = sync.Pool{New: func() any {
		// The level is a valid constant: no error.
		w, _ := gzip.NewWriterLevel(io.Discard, compressionGzipLevel)
		return w
	}}
	brotliPool = sync.Pool{New: func() any {
		return brotli.NewWriterLevel(io.Discard, compressionBrotliQuality)
	}}
	zstdPool = sync.Pool{New: func() any {
		w, err := zstd.NewWriter(io.Discard,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(compressionZstdWindow),
			zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // the options are constants, valid
		}
		return w
	}}
)

// encoderPool is the pool of a coding (nil for none; compileCompression
// lets no other coding through).
func encoderPool(coding string) *sync.Pool {
	switch coding {
	case codingGzip:
		return &gzipPool
	case codingBrotli:
		return &brotliPool
	case codingZstd:
		return &zstdPool
	}
	return nil
}

// getEncoder takes an encoder of coding from its pool, writing to w.
func getEncoder(coding string, w io.Writer) encoder {
	e := encoderPool(coding).Get().(encoder)
	e.Reset(w)
	return e
}

// putEncoder returns a closed encoder to its pool.
func putEncoder(coding string, e encoder) {
	encoderPool(coding).Put(e)
}
