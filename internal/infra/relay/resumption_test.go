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

package relay

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/uuid"

	"github.com/coxswain-go/coxswain/internal/infra/lifecycle"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// logLines is a logger that keeps its lines (and passes them to t.Log).
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func captureLog(t *testing.T) (logr.Logger, *logLines) {
	ll := &logLines{}
	return funcr.New(func(prefix, args string) {
		ll.mu.Lock()
		ll.lines = append(ll.lines, prefix+" "+args)
		ll.mu.Unlock()
		t.Log(prefix, args)
	}, funcr.Options{}), ll
}

// count returns the number of lines holding every word.
func (l *logLines) count(words ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			n++
		}
	}
	return n
}

// resumingAgent is an agent with a TLS session cache: its connections
// resume the session of an earlier one.
type resumingAgent struct {
	cfg     *tls.Config
	resumed atomic.Bool
}

func newResumingAgent(roots *x509.CertPool, cert tls.Certificate, version uint16) *resumingAgent {
	a := &resumingAgent{}
	a.cfg = &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: version, MaxVersion: version,
		ClientSessionCache: tls.NewLRUClientSessionCache(4),
		// Called on full and resumed handshakes alike: records which one
		// this was, before the server's verdict arrives.
		VerifyConnection: func(cs tls.ConnectionState) error { a.resumed.Store(cs.DidResume); return nil }}
	return a
}

// get makes one new connection and one request. It returns the HTTP
// status, or the TLS/connection error when the relay refused the agent.
// The response is read in full so that a TLS 1.3 session ticket, sent after
// the handshake, reaches the session cache.
func (a *resumingAgent) get(addr string) (int, error) {
	a.resumed.Store(false)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, a.cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	// In TLS 1.3 the server refuses after the client's handshake is done:
	// its alert may close the connection before the request is written, so
	// a failed write is followed by a read that surfaces the alert.
	_, werr := fmt.Fprint(conn, "GET /v1/agent/identity HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, werr
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// TestResumedSessionIsVerified: an agent that resumes a TLS session after
// its project left the membership, or after its CA was dropped by
// rotate-ca finish, is refused in the handshake (TLS 1.2 tickets and TLS 1.3
// PSKs alike), while a resumption of a still-valid agent goes through.
func TestResumedSessionIsVerified(t *testing.T) {
	ctx := context.Background()
	shard := uuid.NewString()
	tl := tool(t)
	cert, roots := serverCert(t)
	r := startRelay(t, shard, cfg, filepath.Join(t.TempDir(), "relay-snapshot.json"), cert)
	testkit.EventuallyWithin(t, waitFor, "first list", r.relay.Membership.Ready)

	versions := map[string]uint16{"TLS1.2": tls.VersionTLS12, "TLS1.3": tls.VersionTLS13}
	for vname, version := range versions {
		t.Run(vname, func(t *testing.T) {
			mk := func() string {
				in := lifecycle.SetupInput{Name: uuid.NewString(), ShardID: shard, APIServerEndpoint: "p.svc:6443"}
				if _, err := tl.Setup(ctx, in); err != nil {
					t.Fatal(err)
				}
				testkit.EventuallyWithin(t, waitFor, "project in membership", func() bool { _, ok := r.relay.Membership.Get(in.Name); return ok })
				return in.Name
			}
			// establish connects twice: a full handshake, then a resumed
			// one, both accepted.
			establish := func(a *resumingAgent) {
				t.Helper()
				if code, err := a.get(r.addr); err != nil || code != http.StatusOK || a.resumed.Load() {
					t.Fatalf("first connection: HTTP %d, %v, resumed=%v", code, err, a.resumed.Load())
				}
				if code, err := a.get(r.addr); err != nil || code != http.StatusOK || !a.resumed.Load() {
					t.Fatalf("second connection: HTTP %d, %v, resumed=%v; want a resumed, accepted session", code, err, a.resumed.Load())
				}
			}
			// refusedOnResumption reconnects and wants the handshake refused.
			refusedOnResumption := func(a *resumingAgent, why string) {
				t.Helper()
				before := r.log.count("refused agent certificate", `"resumed"=true`)
				code, err := a.get(r.addr)
				if err == nil {
					t.Fatalf("%s: resumed handshake accepted (then HTTP %d)", why, code)
				}
				if !strings.Contains(err.Error(), "bad certificate") {
					t.Fatalf("%s: connection failed with %v, want a bad_certificate alert", why, err)
				}
				if r.log.count("refused agent certificate", `"resumed"=true`) != before+1 {
					t.Fatalf("%s: the relay did not log a refused resumed handshake", why)
				}
			}

			// The project is torn down.
			gone := mk()
			agent := newResumingAgent(roots, agentCert(t, tl, get(t, gone), false, gone), version)
			establish(agent)
			if _, err := tl.Teardown(ctx, gone, shard); err != nil {
				t.Fatal(err)
			}
			testkit.EventuallyWithin(t, waitFor, "project removed", func() bool { _, ok := r.relay.Membership.Get(gone); return !ok })
			refusedOnResumption(agent, "torn-down project")

			// The agent's CA is dropped by rotate-ca finish.
			rotated := mk()
			oldAgent := newResumingAgent(roots, agentCert(t, tl, get(t, rotated), false, rotated), version)
			establish(oldAgent)
			if _, err := tl.RotateCAStart(ctx, rotated); err != nil {
				t.Fatal(err)
			}
			if _, err := tl.RotateCAFinish(ctx, rotated, 0); err != nil {
				t.Fatal(err)
			}
			final := get(t, rotated)
			testkit.EventuallyWithin(t, waitFor, "old CA dropped", func() bool {
				m, _ := r.relay.Membership.Get(rotated)
				return m.Certificates == final.Spec.AgentCA.Certificates
			})
			newAgent := newResumingAgent(roots, agentCert(t, tl, final, false, rotated), version)
			establish(newAgent)
			refusedOnResumption(oldAgent, "dropped CA")
		})
	}
}

// TestKeptAliveConnectionIsVerified: a request on a connection opened while
// the agent was valid is refused once its project left the membership.
func TestKeptAliveConnectionIsVerified(t *testing.T) {
	ctx := context.Background()
	shard := uuid.NewString()
	tl := tool(t)
	in := lifecycle.SetupInput{Name: uuid.NewString(), ShardID: shard, APIServerEndpoint: "p.svc:6443"}
	if _, err := tl.Setup(ctx, in); err != nil {
		t.Fatal(err)
	}
	cert, roots := serverCert(t)
	r := startRelay(t, shard, cfg, filepath.Join(t.TempDir(), "relay-snapshot.json"), cert)
	testkit.EventuallyWithin(t, waitFor, "project in membership", func() bool { _, ok := r.relay.Membership.Get(in.Name); return ok })

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		Certificates: []tls.Certificate{agentCert(t, tl, get(t, in.Name), false, in.Name)}}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	request := func() (int, bool) {
		t.Helper()
		reused := false
		req, _ := http.NewRequest(http.MethodGet, "https://"+r.addr+"/v1/agent/identity", nil)
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, reused
	}
	if code, _ := request(); code != http.StatusOK {
		t.Fatalf("valid agent: HTTP %d", code)
	}
	if _, err := tl.Teardown(ctx, in.Name, shard); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "project removed", func() bool { _, ok := r.relay.Membership.Get(in.Name); return !ok })
	code, reused := request()
	if !reused {
		t.Fatal("the second request did not reuse the kept-alive connection")
	}
	if code != http.StatusForbidden {
		t.Fatalf("request of a removed project's agent on a kept-alive connection: HTTP %d, want 403", code)
	}
}
