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

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The bounded load generator of the rollout tests. It holds a fixed number
// of keep-alive HTTP/1.1 connections and counts every failure: a refused
// or reset connection, an EOF instead of a response, a timeout, a non-2xx
// status. It never retries. That is why it speaks HTTP/1.1 itself rather
// than through net/http's Transport: the Transport silently re-sends an
// idempotent request whose reused connection was closed before any
// response byte arrived - exactly the failure a hitless rollout must not
// cause, and the one a user's non-retrying client (or a POST) would see.
// A connection is closed by the client only when a response says
// "Connection: close" (the proxy's drain), and then redialled.

// loadConfig is one load run.
type loadConfig struct {
	addr, host string
	// conns is the number of concurrent keep-alive connections; the odd
	// ones send "Content-Length: 0" on their first request, which makes
	// the proxy hand them to net/http, so both of its HTTP/1.1 servers are
	// under load.
	conns int
	// pace is the pause after each response, per connection.
	pace time.Duration
	// maxDuration and maxRequestsPerConn bound the run if stop never comes.
	maxDuration        time.Duration
	maxRequestsPerConn int
}

// loadRun is a running load; stop it with finish.
type loadRun struct {
	cfg     loadConfig
	start   time.Time
	stop    chan struct{}
	wg      sync.WaitGroup
	sent    atomic.Int64
	failed  atomic.Int64
	redials atomic.Int64

	mu       sync.Mutex
	failures []string // the first few, with their time into the run
	elapsed  time.Duration
}

// loadReport is what a finished run saw.
type loadReport struct {
	Sent, Failed, Redials int64
	Elapsed               time.Duration
	Failures              []string
}

func (r loadReport) String() string {
	rate := float64(r.Sent) / r.Elapsed.Seconds()
	return fmt.Sprintf("%d requests in %s (%.0f/s), %d failed, %d reconnections after Connection: close",
		r.Sent, r.Elapsed.Round(time.Millisecond), rate, r.Failed, r.Redials)
}

func startLoad(cfg loadConfig) *loadRun {
	l := &loadRun{cfg: cfg, start: time.Now(), stop: make(chan struct{})}
	for i := 0; i < cfg.conns; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.worker(i%2 == 1)
		}()
	}
	return l
}

// finish stops the run and waits for every connection's last request.
func (l *loadRun) finish() loadReport {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.elapsed == 0 {
		l.elapsed = time.Since(l.start)
	}
	return loadReport{Sent: l.sent.Load(), Failed: l.failed.Load(), Redials: l.redials.Load(), Elapsed: l.elapsed, Failures: append([]string(nil), l.failures...)}
}

func (l *loadRun) fail(format string, args ...any) {
	l.failed.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 5 {
		l.failures = append(l.failures, fmt.Sprintf("%s: ", time.Since(l.start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
	}
}

func (l *loadRun) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// worker runs one connection's request loop.
func (l *loadRun) worker(netHTTP bool) {
	deadline := l.start.Add(l.cfg.maxDuration)
	var conn net.Conn
	var br *bufio.Reader
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	first := true
	for i := 0; i < l.cfg.maxRequestsPerConn && !l.stopped() && time.Now().Before(deadline); i++ {
		l.sent.Add(1)
		if conn == nil {
			c, err := net.DialTimeout("tcp", l.cfg.addr, 2*time.Second)
			if err != nil {
				l.fail("dial %s: %v", l.cfg.addr, err)
				time.Sleep(l.cfg.pace)
				continue
			}
			conn, br, first = c, bufio.NewReader(c), true
		}
		closeAfter, err := l.roundTrip(conn, br, netHTTP && first)
		first = false
		if err != nil {
			l.fail("%v", err)
			_ = conn.Close()
			conn = nil
		} else if closeAfter {
			l.redials.Add(1)
			_ = conn.Close()
			conn = nil
		}
		time.Sleep(l.cfg.pace)
	}
}

// roundTrip sends one GET and reads its response; it reports whether the
// response closes the connection.
func (l *loadRun) roundTrip(conn net.Conn, br *bufio.Reader, handoff bool) (bool, error) {
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	extra := ""
	if handoff {
		extra = "Content-Length: 0\r\n"
	}
	if _, err := fmt.Fprintf(conn, "GET /hitless HTTP/1.1\r\nHost: %s\r\n%s\r\n", l.cfg.host, extra); err != nil {
		return false, fmt.Errorf("writing the request: %w", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return false, fmt.Errorf("reading the response: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return false, fmt.Errorf("reading the body: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.Close, fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp.Close, nil
}
