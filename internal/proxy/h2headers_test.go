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
	"fmt"
	"io"
	"net"
	"net/http"
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

// TestHTTP2UpstreamRequestHeadersWithoutTable: the proxy's HTTP/2
// requests to an h2c backend are encoded without HPACK's dynamic table,
// each header block decoding on its own: the X-Request-Id and
// X-Forwarded-For of one request would otherwise take the place of
// another's in the table at each request.
func TestHTTP2UpstreamRequestHeadersWithoutTable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	blocks := make(chan []byte, 16)
	go rawH2CBackend(ln, blocks)

	set := &snapshot.EndpointSet{Name: "ns/raw:80", AppProtocol: snapshot.AppProtocolH2C,
		Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: int32(ln.Addr().(*net.TCPAddr).Port)}}}
	port := testkit.FreePortInt32(t)
	p := newTestPlane(t)
	p.mustApply(t, ppSnapshot(port, set, nil, nil))
	for i := range 3 {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/r%d", port, i))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i+1, resp.Status)
		}
		fields, err := hpack.NewDecoder(4096, nil).DecodeFull(<-blocks)
		if err != nil {
			t.Errorf("request %d's header block does not decode on its own: %v", i+1, err)
			continue
		}
		var path string
		for _, f := range fields {
			if f.Name == ":path" {
				path = f.Value
			}
		}
		if path != fmt.Sprintf("/r%d", i) {
			t.Errorf("request %d: :path %q", i+1, path)
		}
	}
}

// rawH2CBackend serves h2c on ln with a framer: it sends each request's
// header block (HEADERS and its CONTINUATIONs) to blocks and answers 200
// with no body.
func rawH2CBackend(ln net.Listener, blocks chan<- []byte) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			preface := make([]byte, len(http2.ClientPreface))
			if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
				return
			}
			fr := http2.NewFramer(c, c)
			if fr.WriteSettings() != nil {
				return
			}
			var resp bytes.Buffer
			enc := hpack.NewEncoder(&resp)
			_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			var block []byte
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				var end bool
				switch f := f.(type) {
				case *http2.SettingsFrame:
					if !f.IsAck() {
						_ = fr.WriteSettingsAck()
					}
					continue
				case *http2.HeadersFrame:
					block, end = append(block[:0], f.HeaderBlockFragment()...), f.HeadersEnded()
				case *http2.ContinuationFrame:
					block, end = append(block, f.HeaderBlockFragment()...), f.HeadersEnded()
				default:
					continue
				}
				if end {
					blocks <- bytes.Clone(block)
					_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.Header().StreamID, BlockFragment: resp.Bytes(), EndStream: true, EndHeaders: true})
				}
			}
		}()
	}
}
