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
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestHTTP2ResponseHeadersWithoutTable: over TLS and h2c, every response's
// header block decodes on its own, with an empty HPACK table: the server
// adds no response field to its dynamic table for later responses to
// refer to (as nginx), while it answers each request.
func TestHTTP2ResponseHeadersWithoutTable(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	httpPort, tlsPort := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	cert := testCert(t, "a.example")
	set := epSet("ns/a:80", a)
	s := ppSnapshot(httpPort, set, nil, nil)
	s2 := ppSnapshot(tlsPort, set, nil, &cert)
	s2.Listeners[0].Name = "tls"
	s.Listeners = append(s.Listeners, s2.Listeners...)
	s.Certificates = s2.Certificates
	snapshot.Normalize(s)
	p.mustApply(t, s)

	for _, overTLS := range []bool{true, false} {
		blocks := h2ResponseHeaderBlocks(t, tlsPortOr(overTLS, tlsPort, httpPort), overTLS, 3)
		for i, b := range blocks {
			fields, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
			if err != nil {
				t.Errorf("tls=%v: response %d's header block does not decode on its own: %v", overTLS, i+1, err)
				continue
			}
			if len(fields) == 0 || fields[0].Name != ":status" || fields[0].Value != "200" {
				t.Errorf("tls=%v: response %d: %v", overTLS, i+1, fields)
			}
		}
	}
}

// h2ResponseHeaderBlocks sends n GET requests for / in turn on one HTTP/2
// connection to port (over TLS with ALPN h2, else h2c with prior
// knowledge) and returns each response's header block (HEADERS and its
// CONTINUATIONs), in order.
func h2ResponseHeaderBlocks(t *testing.T, port int32, overTLS bool, n int) [][]byte {
	t.Helper()
	c := dialHTTP2Port(t, port, overTLS)
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var req bytes.Buffer
	enc := hpack.NewEncoder(&req)
	var blocks [][]byte
	for i := 0; i < n; i++ {
		stream := uint32(2*i + 1)
		req.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "a.example"}, {":path", "/"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: req.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		var block []byte
		for done := false; !done; {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("response %d: %v", i+1, err)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					_ = fr.WriteSettingsAck()
				}
			case *http2.HeadersFrame:
				if f.StreamID == stream {
					block = append(block, f.HeaderBlockFragment()...)
				}
			case *http2.ContinuationFrame:
				if f.StreamID == stream {
					block = append(block, f.HeaderBlockFragment()...)
				}
			case *http2.GoAwayFrame:
				t.Fatalf("response %d: GOAWAY %v", i+1, f.ErrCode)
			case *http2.RSTStreamFrame:
				t.Fatalf("response %d: RST_STREAM %v", i+1, f.ErrCode)
			}
			done = f.Header().StreamID == stream && f.Header().Flags.Has(http2.FlagDataEndStream)
		}
		blocks = append(blocks, block)
	}
	return blocks
}
