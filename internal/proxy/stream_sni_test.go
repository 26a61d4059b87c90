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
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// memConn is a connection that carries fixed bytes and counts what was
// read of them.
type memConn struct {
	r    *bytes.Reader
	read int
	// wrote collects what was written (the ClientHello of a client).
	wrote bytes.Buffer
}

func (m *memConn) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.read += n
	return n, err
}
func (m *memConn) Write(p []byte) (int, error)      { return m.wrote.Write(p) }
func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

// clientHelloBytes is the ClientHello crypto/tls's client sends for sni
// ("" for none).
func clientHelloBytes(t testing.TB, sni string) []byte {
	t.Helper()
	m := &memConn{r: bytes.NewReader(nil)}
	cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"h2"}}
	if sni == "" {
		cfg.ServerName = "127.0.0.1"
	}
	if err := tls.Client(m, cfg).Handshake(); err == nil {
		t.Fatal("a handshake without a server succeeded")
	}
	if m.wrote.Len() == 0 {
		t.Fatal("the client wrote no ClientHello")
	}
	return m.wrote.Bytes()
}

// checkPeek runs the peek over data with the cap limit and checks what it
// must never do: read past its cap (limit), or return as recorded anything but
// exactly the bytes it read, which are a prefix of data.
func checkPeek(t *testing.T, data []byte, limit int) (*clientHello, []byte, error) {
	t.Helper()
	m := &memConn{r: bytes.NewReader(data)}
	hello, rec, err := peekClientHello(m, limit)
	if m.read > limit {
		t.Fatalf("the peek read %d bytes, above its cap of %d", m.read, limit)
	}
	if len(rec) != m.read || !bytes.Equal(rec, data[:len(rec)]) {
		t.Fatalf("recorded %d bytes that are not the %d bytes read from the input", len(rec), m.read)
	}
	if (hello == nil) == (err == nil) {
		t.Fatalf("peek returned hello %v with error %v", hello, err)
	}
	return hello, rec, err
}

// TestSNIPeekRecordsClientHello: the peek returns the SNI crypto/tls
// parsed and exactly the ClientHello it read; below the ClientHello's
// size it gives up at its cap.
func TestSNIPeekRecordsClientHello(t *testing.T) {
	for _, sni := range []string{"A.Example.com", ""} {
		raw := clientHelloBytes(t, sni)
		hello, rec, err := checkPeek(t, raw, maxClientHelloBytes)
		if err != nil {
			t.Fatalf("SNI %q: %v", sni, err)
		}
		if hello.serverName != sni || !bytes.Equal(rec, raw) {
			t.Errorf("SNI %q: peek saw %q and recorded %d of %d bytes", sni, hello.serverName, len(rec), len(raw))
		}
		if hello, _, err := checkPeek(t, raw, len(raw)-1); hello != nil || !errors.Is(err, errHelloTooLarge) {
			t.Errorf("SNI %q with the cap one byte short: hello %v, error %v; want errHelloTooLarge", sni, hello, err)
		}
		if hello, _, err := checkPeek(t, raw[:len(raw)/2], maxClientHelloBytes); hello != nil || err == nil {
			t.Errorf("SNI %q, half a ClientHello: hello %v, error %v", sni, hello, err)
		}
	}
	if hello, _, err := checkPeek(t, []byte("GET / HTTP/1.1\r\n\r\n"), maxClientHelloBytes); hello != nil || err == nil {
		t.Errorf("an HTTP request: hello %v, error %v", hello, err)
	}
	var r replayConn
	r.pending = []byte("ab")
	r.Conn = &memConn{r: bytes.NewReader([]byte("cd"))}
	if got, _ := io.ReadAll(&r); string(got) != "abcd" {
		t.Errorf("replayConn read %q, want the recorded bytes then the connection's", got)
	}
}

// FuzzSNIPeek: on any bytes the peek neither panics, nor reads past its
// cap, and what it returns as recorded is exactly a prefix of the input.
func FuzzSNIPeek(f *testing.F) {
	hello := clientHelloBytes(f, "a.example.com")
	f.Add(hello, uint16(0))
	f.Add(clientHelloBytes(f, ""), uint16(100))
	f.Add(hello[:len(hello)/2], uint16(0))
	f.Add(append(append([]byte{}, hello...), "trailing application data"...), uint16(0))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), uint16(0))
	f.Add([]byte{22, 3, 1, 0xff, 0xff}, uint16(0))
	f.Add([]byte{}, uint16(7))
	f.Fuzz(func(t *testing.T, data []byte, small uint16) {
		checkPeek(t, data, maxClientHelloBytes)
		checkPeek(t, data, 1+int(small)%4096)
	})
}
