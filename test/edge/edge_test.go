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

// Package edge runs raw HTTP/1.1 request vectors against the coxswain
// binary's proxy over loopback, and the same bytes against net/http's own
// server, and checks every answer, every connection's fate and every
// request the backend saw.
package edge

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// proxyProcess is a running `coxswain serve proxy --snapshot-file`.
type proxyProcess struct {
	addr string // the HTTP listener, 127.0.0.1:port
	out  *testkit.SyncBuffer
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// coxswainBinary builds cmd/coxswain once per test binary, unless
// COXSWAIN_EDGE_BINARY names one.
func coxswainBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if bin := os.Getenv("COXSWAIN_EDGE_BINARY"); bin != "" {
			binPath = bin // a prebuilt binary, e.g. an older release to compare
			return
		}
		dir, err := os.MkdirTemp("", "coxswain-edge-")
		if err != nil {
			buildErr = err
			return
		}
		// The data plane alone beside it, as in the image: coxswain's
		// `serve proxy` hands over to it.
		binPath = filepath.Join(dir, "coxswain")
		for _, b := range []struct{ out, pkg string }{{binPath, "./cmd/coxswain"}, {filepath.Join(dir, names.ProxyBinaryName), "./cmd/coxswain-proxy"}} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = testkit.RepoRoot()
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// startProxy runs the binary with snapshot (a YAML template whose
// {{PORT}} and {{BACKEND}} are filled in) and extra flags, and waits until
// it is ready.
func startProxy(t *testing.T, snapshot, backendAddr string, flags ...string) *proxyProcess {
	t.Helper()
	port := testkit.FreePort(t)
	host, bport, err := net.SplitHostPort(backendAddr)
	if err != nil {
		t.Fatal(err)
	}
	snap := strings.NewReplacer("{{PORT}}", fmt.Sprint(port), "{{BACKEND_HOST}}", host, "{{BACKEND_PORT}}", bport).Replace(snapshot)
	dir := t.TempDir()
	file := filepath.Join(dir, "snapshot.yaml")
	if err := os.WriteFile(file, []byte(snap), 0o600); err != nil {
		t.Fatal(err)
	}
	health := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	args := append([]string{"serve", "proxy", "--shared", "--snapshot-file", file, "--bind-host", "127.0.0.1",
		"--health-probe-bind-address", health, "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
		"--access-log=false"}, flags...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, coxswainBinary(t), args...)
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("proxy output:\n%s", out.String())
		}
	})
	testkit.EventuallyExplained(t, 30*time.Second, func() string {
		resp, err := http.Get("http://" + health + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return ""
			}
		}
		select {
		case <-done:
			t.Fatalf("proxy exited:\n%s", out.String())
		default:
		}
		return "proxy not ready:\n" + out.String()
	})
	return &proxyProcess{addr: fmt.Sprintf("127.0.0.1:%d", port), out: out}
}

// seen is one request a server's handler received.
type seen struct {
	line   string // "METHOD request-URI"
	header http.Header
	client string // the client address the request is attributed to
}

// recorder keeps the requests a server saw, keyed by the client they are
// attributed to (X-Forwarded-For behind the proxy, the peer address for
// net/http's own server), so vectors can run in parallel from distinct
// loopback source addresses.
type recorder struct {
	mu   sync.Mutex
	reqs map[string][]seen
}

func newRecorder() *recorder { return &recorder{reqs: map[string][]seen{}} }

func (rec *recorder) add(client string, r *http.Request) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.reqs[client] = append(rec.reqs[client], seen{line: r.Method + " " + r.RequestURI, header: r.Header.Clone(), client: client})
}

func (rec *recorder) of(client string) []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.reqs[client]...)
}

// startBackend is the proxy's upstream: it records every request, answers
// 200, and switches protocols for any Upgrade, after which it serves the
// tunnel as HTTP/1.1 and records what comes through it, so a tunnel opened
// past the proxy's routes shows up in the record.
func startBackend(t *testing.T, rec *recorder) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client, _, _ := strings.Cut(r.Header.Get("X-Forwarded-For"), ",")
		rec.add(strings.TrimSpace(client), r)
		_, _ = io.Copy(io.Discard, r.Body)
		if up := r.Header.Get("Upgrade"); up != "" {
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer func() { _ = conn.Close() }()
			_, _ = fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", up)
			_ = brw.Flush()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			for {
				tr, err := http.ReadRequest(brw.Reader)
				if err != nil {
					return
				}
				rec.add(strings.TrimSpace(client), tr)
				_, _ = io.Copy(io.Discard, tr.Body)
				_, _ = io.WriteString(brw, "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\ntunnel\n")
				_ = brw.Flush()
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "backend\n")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// startReference is net/http's own server with a handler that behaves as
// a proxy does with a body: it reads the body to its end before answering,
// and answers 400 and closes when the body is malformed.
func startReference(t *testing.T, rec *recorder) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		rec.add(host, r)
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "reference\n")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// exchange is what one connection got back for a vector's bytes.
type exchange struct {
	statuses []int
	closed   bool
	err      error
}

func (e exchange) String() string {
	fate := "kept open"
	if e.closed {
		fate = "closed"
	}
	if e.err != nil {
		fate += " (" + e.err.Error() + ")"
	}
	return fmt.Sprintf("%v, %s", e.statuses, fate)
}

// send dials addr from the loopback address src, writes raw, and reads
// responses until the server closes the connection or stays silent for
// quiet. A 101 answer ends the reading: what follows is a tunnel.
func send(addr, src string, raw []byte, methods []string, quiet time.Duration) exchange {
	return sendOn(addr, src, nil, raw, methods, quiet)
}

// sendTLS is send over TLS (SNI a.example, ALPN http/1.1, the server's
// certificate not checked).
func sendTLS(addr, src string, raw []byte, methods []string, quiet time.Duration) exchange {
	return sendOn(addr, src, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}, raw, methods, quiet)
}

// sendOn is send, over TLS with cfg unless it is nil.
func sendOn(addr, src string, cfg *tls.Config, raw []byte, methods []string, quiet time.Duration) exchange {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return exchange{err: err}
	}
	defer func() { _ = conn.Close() }()
	if cfg != nil {
		tc := tls.Client(conn, cfg)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			return exchange{err: err}
		}
		_ = tc.SetDeadline(time.Time{})
		conn = tc
	}
	if _, err := conn.Write(raw); err != nil {
		return exchange{err: err}
	}
	br := bufio.NewReader(conn)
	var ex exchange
	for i := 0; ; i++ {
		method := http.MethodGet
		if i < len(methods) {
			method = methods[i]
		}
		_ = conn.SetReadDeadline(time.Now().Add(quiet))
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return ex // silent: the connection stays open
			}
			ex.closed = true
			return ex
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			ex.err = err
			ex.closed = true
			return ex
		}
		ex.statuses = append(ex.statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return ex
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			ex.err = err
			ex.closed = true
			return ex
		}
		_ = resp.Body.Close()
	}
}
