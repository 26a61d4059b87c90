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
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// breaker is a transport that a test can break: requests fail and open
// response bodies (the watch stream) are cut.
type breaker struct {
	mu     sync.Mutex
	broken bool
	bodies map[*cutBody]struct{}
}

type cutBody struct {
	http.Response
	b  *breaker
	rc interface {
		Read([]byte) (int, error)
		Close() error
	}
}

func (c *cutBody) Read(p []byte) (int, error) { return c.rc.Read(p) }
func (c *cutBody) Close() error {
	c.b.mu.Lock()
	delete(c.b.bodies, c)
	c.b.mu.Unlock()
	return c.rc.Close()
}

func (b *breaker) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		b.mu.Lock()
		broken := b.broken
		b.mu.Unlock()
		if broken {
			return nil, errors.New("transport broken by test")
		}
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		cb := &cutBody{b: b, rc: resp.Body}
		b.mu.Lock()
		if b.bodies == nil {
			b.bodies = map[*cutBody]struct{}{}
		}
		b.bodies[cb] = struct{}{}
		b.mu.Unlock()
		resp.Body = cb
		return resp, nil
	})
}

func (b *breaker) set(broken bool) {
	b.mu.Lock()
	b.broken = broken
	var open []*cutBody
	if broken {
		for cb := range b.bodies {
			open = append(open, cb)
		}
	}
	b.mu.Unlock()
	for _, cb := range open {
		_ = cb.rc.Close()
	}
}

// TestTransportFailureKeepsMembership: out of service until the first list;
// a broken watch and failing relists never shrink the membership; the first
// successful relist is diffed against the last known set.
func TestTransportFailureKeepsMembership(t *testing.T) {
	shard := uuid.NewString()
	a := create(t, project(shard, "a.svc:443"), t0)
	b := create(t, project(shard, "b.svc:443"), t0)

	brk := &breaker{}
	brk.set(true)
	rc := rest.CopyConfig(cfg)
	rc.WrapTransport = brk.wrap
	rec := newRecorder()
	c, err := New(Config{ShardID: shard, RESTConfig: rc, Keys: keys, OnEvent: rec.on, Log: testr.New(t),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	testkit.EventuallyWithin(t, waitFor, "failed lists", func() bool { return value(c.cfg.Metrics.ListErrors) >= 2 })
	if c.Ready() || c.ReadyzCheck(nil) == nil || len(c.Members()) != 0 {
		t.Fatal("ready or populated before any list succeeded")
	}

	brk.set(false)
	testkit.EventuallyWithin(t, waitFor, "first list", c.Ready)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		ev := rec.next(t)
		if ev.Type != Added {
			t.Fatalf("unexpected %s", ev.Type)
		}
		got[ev.Name] = true
	}
	if !got[a.Name] || !got[b.Name] {
		t.Fatalf("added %v", got)
	}
	// Make sure the watch is established before cutting it.
	setReady(t, a.Name, metav1.ConditionTrue)
	testkit.EventuallyWithin(t, waitFor, "watch delivers", func() bool { m, _ := c.Get(a.Name); return m.Ready == metav1.ConditionTrue })

	listErrs := value(c.cfg.Metrics.ListErrors)
	brk.set(true)
	// While broken: a deletion and an addition happen on the server.
	if err := k8s.Delete(context.Background(), &infrav1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Name: a.Name}}); err != nil {
		t.Fatal(err)
	}
	cc := create(t, project(shard, "c.svc:443"), t0)
	testkit.EventuallyWithin(t, waitFor, "relists failing", func() bool { return value(c.cfg.Metrics.ListErrors) >= listErrs+3 })
	if m := c.Members(); len(m) != 2 || m[0].Name == cc.Name || m[1].Name == cc.Name {
		t.Fatalf("membership changed during the outage: %+v", m)
	}
	if !c.Ready() {
		t.Fatal("readiness lost during an outage after the first list")
	}
	select {
	case ev := <-rec.ch:
		t.Fatalf("event during the outage: %s %s", ev.Type, ev.Name)
	default:
	}

	brk.set(false)
	seen := map[EventType]string{}
	for i := 0; i < 2; i++ {
		ev := rec.next(t)
		seen[ev.Type] = ev.Name
	}
	if seen[Removed] != a.Name || seen[Added] != cc.Name {
		t.Fatalf("after recovery: %v", seen)
	}
	names := map[string]bool{}
	for _, m := range c.Members() {
		names[m.Name] = true
	}
	if len(names) != 2 || !names[b.Name] || !names[cc.Name] {
		t.Fatalf("membership after relist: %v", names)
	}
}
