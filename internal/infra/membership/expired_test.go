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

package membership

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// tooOldResourceVersion is older than anything the apiserver's watch cache
// still holds, so a watch from it is answered 410 Gone (reason Expired).
const tooOldResourceVersion = "1"

// expirer is a transport that, once armed, ends the open Project watches
// the way the server ends one whose timeout ran out (a clean EOF), holds the
// Reflector's next plain watch (one without sendInitialEvents) until
// released, and then sends it from tooOldResourceVersion: the real apiserver
// answers that watch with 410 Gone.
type expirer struct {
	mu      sync.Mutex
	armed   bool
	held    chan struct{} // closed when the armed watch arrives
	release chan struct{} // closing it sends the held watch on
	open    map[*eofBody]struct{}
	expired atomic.Int32 // watches sent from tooOldResourceVersion
}

func newExpirer() *expirer {
	return &expirer{held: make(chan struct{}), release: make(chan struct{}), open: map[*eofBody]struct{}{}}
}

func (e *expirer) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		if q.Get("watch") != "true" {
			return rt.RoundTrip(r)
		}
		if q.Get("sendInitialEvents") == "" && e.takeArmed() {
			close(e.held)
			select {
			case <-e.release:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			q.Set("resourceVersion", tooOldResourceVersion)
			r = r.Clone(r.Context())
			r.URL.RawQuery = q.Encode()
			e.expired.Add(1)
		}
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		b := &eofBody{rc: resp.Body}
		e.mu.Lock()
		e.open[b] = struct{}{}
		e.mu.Unlock()
		resp.Body = b
		return resp, nil
	})
}

func (e *expirer) takeArmed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	armed := e.armed
	e.armed = false
	return armed
}

// arm ends the open watches cleanly and holds the next plain watch.
func (e *expirer) arm() {
	e.mu.Lock()
	e.armed = true
	open := e.open
	e.open = map[*eofBody]struct{}{}
	e.mu.Unlock()
	for b := range open {
		b.end()
	}
}

// eofBody is a watch response body that end turns into a clean end of
// stream.
type eofBody struct {
	rc    io.ReadCloser
	ended atomic.Bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.ended.Load() {
		return 0, io.EOF
	}
	return n, err
}

func (b *eofBody) Close() error { return b.rc.Close() }

func (b *eofBody) end() {
	b.ended.Store(true)
	_ = b.rc.Close()
}

// presence watches one member (c is set before start): from start on, at every event and every
// millisecond, it checks that the Project is a member; left reports
// whether it ever was not.
type presence struct {
	c        *Client
	name     string
	checking atomic.Bool
	absent   atomic.Bool
}

func (p *presence) check() {
	if !p.checking.Load() {
		return
	}
	if _, ok := p.c.Get(p.name); !ok {
		p.absent.Store(true)
	}
}

func (p *presence) start(t *testing.T) {
	p.checking.Store(true)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				p.check()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
}

func (p *presence) left() bool { return p.absent.Load() }

// TestExpiredResourceVersionRelists: when the watch cannot resume because
// its resourceVersion has expired (410 Gone from the real apiserver), the
// Reflector lists again and that list is diffed against the membership: the
// changes made while no watch was open all arrive, as the events they are,
// and the membership is never empty on the way.
func TestExpiredResourceVersionRelists(t *testing.T) {
	shard := uuid.NewString()
	a := create(t, project(shard, "a.svc:443"), t0)
	b := create(t, project(shard, "b.svc:443"), t0)
	exp := newExpirer()
	rec := newRecorder()
	log, lines := captureLog(t)
	bPresent := &presence{name: b.Name}
	c := startExpiring(t, shard, exp, func(ev Event) { bPresent.check(); rec.on(ev) }, log)
	bPresent.c = c
	for range 2 {
		if ev := rec.next(t); ev.Type != Added {
			t.Fatalf("unexpected %s %s", ev.Type, ev.Name)
		}
	}
	// The watch is established once it delivers.
	setReady(t, a.Name, metav1.ConditionTrue)
	testkit.EventuallyWithin(t, waitFor, "watch delivers", func() bool { m, _ := c.Get(a.Name); return m.Ready == metav1.ConditionTrue })
	watchErrors := value(c.cfg.Metrics.WatchErrors)
	bPresent.start(t)

	exp.arm()
	select {
	case <-exp.held:
	case <-time.After(15 * time.Second):
		t.Fatal("the reflector did not resume its watch after a clean end")
	}
	// No watch is open: these changes can only arrive through a list.
	deleteProject(t, a.Name)
	cc := create(t, project(shard, "c.svc:443"), t0)
	update(t, b.Name, func(p *infrav1alpha1.Project) {
		p.Spec.APIServerEndpoint = "b2.svc:443"
		sign(t, p, signer, t0.Add(time.Minute))
	})
	setReady(t, b.Name, metav1.ConditionTrue)
	select {
	case ev := <-rec.ch:
		t.Fatalf("event while no watch was open: %s %s", ev.Type, ev.Name)
	default:
	}
	close(exp.release)

	expectOnce(t, rec, map[EventType]string{Removed: a.Name, Added: cc.Name, EndpointChanged: b.Name})
	if n := exp.expired.Load(); n != 1 {
		t.Fatalf("%d watches sent from the expired resourceVersion, want 1", n)
	}
	if !lines.has("watching projects failed", "too old resource version") {
		t.Fatal("the apiserver did not answer 410 Gone (no \"too old resource version\" watch error logged)")
	}
	if value(c.cfg.Metrics.WatchErrors) <= watchErrors {
		t.Fatal("the expired watch was not counted")
	}
	// The watch runs again after the relist, and nothing else came between.
	d := create(t, project(shard, "d.svc:443"), t0)
	rec.expect(t, Added, d.Name)
	if bPresent.left() {
		t.Fatal("the membership lost a Project that never left")
	}
	expectEndpoints(t, c, map[string]string{b.Name: "b2.svc:443", cc.Name: "c.svc:443", d.Name: "d.svc:443"})
	if m, _ := c.Get(b.Name); m.Ready != metav1.ConditionTrue {
		t.Fatalf("status change made during the outage lost: %+v", m)
	}
}

// startExpiring runs a client whose transport is exp's, with short backoffs,
// and waits for its first list.
func startExpiring(t *testing.T, shard string, exp *expirer, onEvent func(Event), log logr.Logger) *Client {
	t.Helper()
	rc := rest.CopyConfig(cfg)
	rc.WrapTransport = exp.wrap
	c, err := New(Config{ShardID: shard, RESTConfig: rc, Keys: keys, OnEvent: onEvent, Log: log,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	testkit.EventuallyWithin(t, waitFor, "first list", c.Ready)
	return c
}

// expectOnce takes len(want) events: one of each type, naming the Project
// want gives for it, in any order.
func expectOnce(t *testing.T, rec *recorder, want map[EventType]string) {
	t.Helper()
	got := map[EventType]string{}
	for range want {
		ev := rec.next(t)
		if _, dup := got[ev.Type]; dup {
			t.Fatalf("second %s event (%s), want one of each of %v", ev.Type, ev.Name, want)
		}
		got[ev.Type] = ev.Name
	}
	for typ, name := range want {
		if got[typ] != name {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

// expectEndpoints checks the membership: exactly the Projects of want, with
// those endpoints.
func expectEndpoints(t *testing.T, c *Client, want map[string]string) {
	t.Helper()
	ms := c.Members()
	if len(ms) != len(want) {
		t.Fatalf("members %+v, want %v", ms, want)
	}
	for _, m := range ms {
		if ep, ok := want[m.Name]; !ok || ep != m.APIServerEndpoint {
			t.Fatalf("members %+v, want %v", ms, want)
		}
	}
}
