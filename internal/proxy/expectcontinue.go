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
	"net"
	"net/http"
	"sync"

	"golang.org/x/net/http/httpguts"
)

// A request on the fast path may carry "Expect: 100-continue" with a body
// (parseSimpleRequest lets no other expectation through). The proxy
// answers the expectation itself, as nginx and Envoy do by default: the
// client gets "100 Continue" when the proxy first takes any of the body,
// and the upstream never sees the Expect field (it gets the body at
// once). A request answered before that (no route, a body limit, an
// authorization refused) gets its answer without the 100, with
// "Connection: close", as net/http's server closes then: the client
// never sent the body, and what comes next on the connection may be the
// body or the next request.
//
// The body streams (streamedbody.go) whatever its length, so that it is
// read only once the request is to be sent on.

// continueOwed is the interim answer a request with Expect: 100-continue
// is owed. Whoever comes first of the body's first read (send) and the
// final answer's head (withhold) settles it; a 100 is never written after
// a final head began.
type continueOwed struct {
	mu    sync.Mutex
	conn  net.Conn
	state continueState
}

type continueState uint8

const (
	continueOwing    continueState = iota
	continueSent                   // the 100 went out: the client sends its body
	continueWithheld               // the final answer came first
)

const continueLine = "HTTP/1.1 100 Continue\r\n\r\n"

// send writes the 100 when it is still owed. Nothing of the final answer
// is on the connection yet (withhold has not run), so it goes straight to
// the connection, ahead of whatever the answer's writer buffers later.
func (c *continueOwed) send() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == continueOwing {
		c.state = continueSent
		_, _ = c.conn.Write([]byte(continueLine))
	}
}

// withhold settles the expectation as the final answer's head is written
// and reports whether the 100 never went out: the connection then closes
// after the answer.
func (c *continueOwed) withhold() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == continueOwing {
		c.state = continueWithheld
	}
	return c.state == continueWithheld
}

// takeExpectation removes the Expect field of a request the fast path
// parsed (parseSimpleRequest let only "100-continue" through, and only
// with a body) and returns what the client is owed; nil without one.
func takeExpectation(req *http.Request, conn net.Conn) *continueOwed {
	if _, ok := req.Header["Expect"]; !ok {
		return nil
	}
	delete(req.Header, "Expect")
	return &continueOwed{conn: conn}
}

// expectsContinue is the one expectation the fast path serves: exactly
// "100-continue", ASCII case folded (net/http's token match).
func expectsContinue(v string) bool {
	return asciiEqualFold(v, "100-continue")
}

// On net/http's side (requests handed off: a chunked body, an escaped
// target, ...) net/http's server sends the 100 at the body's first read.
// But it keeps a connection open after an answer that never asked for the
// body only while the body it wrapped is the request's, and the handler
// wraps it again (timedBody): net/http would then read the body away
// before the answer's head, while the client holds it back until a 100
// that never comes. continueGuard closes such a connection instead, as
// net/http does for its own handlers.

// awaitsContinue reports a request net/http's server owes a 100 Continue:
// HTTP/1.1 or later, a body, and its first Expect field naming
// 100-continue (net/http answers any other expectation 417 itself).
func awaitsContinue(r *http.Request) bool {
	ex := r.Header["Expect"]
	return r.ProtoAtLeast(1, 1) && r.ContentLength != 0 && len(ex) > 0 && httpguts.HeaderValuesContainsToken(ex[:1], "100-continue")
}

// continueGuard is the ResponseWriter of a request that awaits a 100 on
// net/http's side: an answer whose head goes out before the body was
// asked for says Connection: close.
type continueGuard struct {
	http.ResponseWriter
	body  *timedBody
	wrote bool
}

func (g *continueGuard) WriteHeader(code int) {
	if g.wrote {
		return
	}
	if code >= 200 {
		g.wrote = true
		if !g.body.asked.Load() {
			g.Header()["Connection"] = []string{"close"}
		}
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *continueGuard) Write(p []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	return g.ResponseWriter.Write(p)
}

func (g *continueGuard) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach net/http's writer.
func (g *continueGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }
