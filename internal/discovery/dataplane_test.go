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

package discovery_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// dataPlaneLog drives a dedicated Gateway's proxy step by step and records
// each step and the Programmed verdict the server gives after it.
type dataPlaneLog struct {
	t     *testing.T
	ts    *testServer
	steps []string
}

// do runs action, waits until the server has processed it (a data-plane
// change signal), and records the verdict for generation gen.
func (l *dataPlaneLog) do(name string, gen int64, action func()) {
	l.t.Helper()
	for drained := false; !drained; {
		select {
		case <-l.ts.DataPlaneChanges():
		default:
			drained = true
		}
	}
	action()
	select {
	case <-l.ts.DataPlaneChanges():
	case <-time.After(waitFor):
		l.t.Fatalf("no data-plane change after %s", name)
	}
	st := l.ts.GatewayState("apps", "web", gen)
	n, ok := st.Proxies, st.Programmed()
	l.steps = append(l.steps, fmt.Sprintf("%s: proxies=%d programmed=%v", name, n, ok))
}

// send is do for sending one message on st.
func (l *dataPlaneLog) send(name string, gen int64, st discoveryv1.Discovery_StreamClient, m *discoveryv1.ClientMessage) {
	l.t.Helper()
	l.do(name, gen, func() {
		if err := st.Send(m); err != nil {
			l.t.Fatal(err)
		}
	})
}

func TestProgrammedOnlyAfterBindAndAck(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	log := &dataPlaneLog{t: t, ts: ts}
	log.do("publish gen 1", 1, func() {
		ts.publish(t, snap(dedicated, "web", 1, []int32{8080}, "10.0.0.1"))
	})
	svid := p.svidFor(t, "apps", "web-coxswain")
	st, _ := rawStream(t, ts.addr, p, svid)
	log.send("subscribe", 1, st, subscribe("web-1", dedicated))
	m1 := recvSnapshot(t, st)
	log.send("ack gen 1", 1, st, ack(m1))
	log.send("bind 8080", 1, st, nodeStatus(8080))
	// A spec change (generation 2) re-arms the gate until the proxy acks it.
	log.do("publish gen 2", 2, func() {
		ts.publish(t, snap(dedicated, "web", 2, []int32{8080, 9090}, "10.0.0.1"))
	})
	m2 := recvSnapshot(t, st)
	log.send("ack gen 2", 2, st, ack(m2))
	log.send("bind 8080+9090", 2, st, nodeStatus(8080, 9090))
	// A second proxy of the scope must also bind and ack.
	st2, close2 := rawStream(t, ts.addr, p, svid)
	log.send("second proxy subscribes", 2, st2, subscribe("web-2", dedicated))
	if got := metric(t, ts.reg, "coxswain_gateway_dataplane_proxies", map[string]string{"namespace": "apps", "name": "web"}); got != 2 {
		t.Fatalf("coxswain_gateway_dataplane_proxies = %v, want 2", got)
	}
	m3 := recvSnapshot(t, st2)
	log.send("second proxy binds", 2, st2, nodeStatus(8080, 9090))
	log.send("second proxy acks", 2, st2, ack(m3))
	log.do("second proxy disconnects", 2, close2)

	want := []string{
		"publish gen 1: proxies=0 programmed=false",
		"subscribe: proxies=1 programmed=false",
		"ack gen 1: proxies=1 programmed=false",
		"bind 8080: proxies=1 programmed=true",
		"publish gen 2: proxies=1 programmed=false",
		"ack gen 2: proxies=1 programmed=false",
		"bind 8080+9090: proxies=1 programmed=true",
		"second proxy subscribes: proxies=2 programmed=false",
		"second proxy binds: proxies=2 programmed=false",
		"second proxy acks: proxies=2 programmed=true",
		"second proxy disconnects: proxies=1 programmed=true",
	}
	if got := strings.Join(log.steps, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("Programmed sequence:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	// The generation 1 question is answered true too (acked generation ≥ 1).
	if !ts.GatewayState("apps", "web", 1).Programmed() {
		t.Fatal("an acked newer generation satisfies an older one")
	}
	if st := ts.GatewayState("apps", "unknown", 1); st.Proxies != 0 || st.Programmed() {
		t.Fatal("a Gateway no snapshot serves is not programmed")
	}
}

func TestProgrammedInSharedPool(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	// The shared pool serves Gateway apps/web on internal port 20001.
	if err := ts.Publish([]*snapshot.Snapshot{snap(shared, "web", 5, []int32{20001}, "10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, "coxswain-shared-proxy"))
	if err := st.Send(subscribe("shared-1", shared)); err != nil {
		t.Fatal(err)
	}
	m := recvSnapshot(t, st)
	if err := st.Send(nodeStatus(20001)); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(ack(m)); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the shared-pool Gateway to be programmed", func() bool {
		st := ts.GatewayState("apps", "web", 5)
		n, ok := st.Proxies, st.Programmed()
		return n == 1 && ok
	})
	if ts.GatewayState("apps", "web", 6).Programmed() {
		t.Fatal("generation 6 was never acked")
	}
}

// describe renders a GatewayState on one line for sequence comparisons.
func describe(st discovery.GatewayState) string {
	out := fmt.Sprintf("published=%v scope=%s proxies=%d ready=%d", st.Published, st.Scope, st.Proxies, st.Ready)
	for _, r := range st.Rejections {
		out += fmt.Sprintf(" rejected-by=%s(gen %d: %s)", r.NodeID, r.Generation, r.Detail)
	}
	return out
}

// changed runs action and waits for the server's data-plane change signal.
func changed(t *testing.T, ts *testServer, what string, action func()) {
	t.Helper()
	for drained := false; !drained; {
		select {
		case <-ts.DataPlaneChanges():
		default:
			drained = true
		}
	}
	action()
	select {
	case <-ts.DataPlaneChanges():
	case <-time.After(waitFor):
		t.Fatalf("no data-plane change after %s", what)
	}
}

func TestGatewayStateCountsAndRejections(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	send := func(st discoveryv1.Discovery_StreamClient, m *discoveryv1.ClientMessage) func() {
		return func() {
			if err := st.Send(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := describe(ts.GatewayState("apps", "web", 1)); got != "published=false scope=shared proxies=0 ready=0" {
		t.Fatalf("before any publish: %s", got)
	}
	changed(t, ts, "publish gen 1", func() {
		ts.publish(t, snap(dedicated, "web", 1, []int32{8080}, "10.0.0.1"))
	})
	svid := p.svidFor(t, "apps", "web-coxswain")
	st1, _ := rawStream(t, ts.addr, p, svid)
	st2, close2 := rawStream(t, ts.addr, p, svid)
	changed(t, ts, "web-1 subscribes", send(st1, subscribe("web-1", dedicated)))
	changed(t, ts, "web-2 subscribes", send(st2, subscribe("web-2", dedicated)))
	m1, m2 := recvSnapshot(t, st1), recvSnapshot(t, st2)
	var steps []string
	record := func(step string, gen int64) {
		steps = append(steps, step+": "+describe(ts.GatewayState("apps", "web", gen)))
	}
	record("two proxies connected", 1)
	changed(t, ts, "web-1 binds", send(st1, nodeStatus(8080)))
	changed(t, ts, "web-1 acks", send(st1, ack(m1)))
	record("web-1 bound and acked", 1)
	changed(t, ts, "web-2 nacks", send(st2, nack(m2, "listen :8080: address already in use")))
	record("web-2 rejected the full snapshot", 1)
	record("asked about generation 2", 2)

	// Generation 2: web-1 gets a delta, web-2 (no baseline) a full snapshot.
	changed(t, ts, "publish gen 2", func() {
		ts.publish(t, snap(dedicated, "web", 2, []int32{8080}, "10.0.0.2"))
	})
	d1, f2 := recvSnapshot(t, st1), recvSnapshot(t, st2)
	if d1.GetFull() || !f2.GetFull() {
		t.Fatalf("expected a delta to web-1 and a full snapshot to web-2, got full=%v and full=%v", d1.GetFull(), f2.GetFull())
	}
	record("gen 2 published, web-2 still refuses gen 1", 2)
	// A rejected delta is retried at once as a full snapshot: not reported.
	send(st1, nack(d1, "delta received without a baseline"))()
	if f1 := recvSnapshot(t, st1); !f1.GetFull() {
		t.Fatal("a rejected delta is followed by a full snapshot")
	} else {
		record("web-1 rejected the delta", 2)
		changed(t, ts, "web-1 acks gen 2", send(st1, ack(f1)))
	}
	changed(t, ts, "web-2 binds", send(st2, nodeStatus(8080)))
	changed(t, ts, "web-2 acks gen 2", send(st2, ack(f2)))
	record("both acked gen 2", 2)
	changed(t, ts, "web-2 disconnects", close2)
	record("web-2 gone", 2)

	want := []string{
		"two proxies connected: published=true scope=gateway/apps/web proxies=2 ready=0",
		"web-1 bound and acked: published=true scope=gateway/apps/web proxies=2 ready=1",
		"web-2 rejected the full snapshot: published=true scope=gateway/apps/web proxies=2 ready=1 rejected-by=web-2(gen 1: listen :8080: address already in use)",
		"asked about generation 2: published=true scope=gateway/apps/web proxies=2 ready=0",
		"gen 2 published, web-2 still refuses gen 1: published=true scope=gateway/apps/web proxies=2 ready=0",
		"web-1 rejected the delta: published=true scope=gateway/apps/web proxies=2 ready=0",
		"both acked gen 2: published=true scope=gateway/apps/web proxies=2 ready=2",
		"web-2 gone: published=true scope=gateway/apps/web proxies=1 ready=1",
	}
	if got := strings.Join(steps, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("GatewayState sequence:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if r := ts.GatewayState("apps", "web", 2).Rejections; len(r) != 0 {
		t.Fatalf("an ack clears the proxy's rejection, got %v", r)
	}
}

// TestRepeatedBoundPortsDoNotSignal: a proxy reports its bound ports
// after every snapshot it applies; a report of the ports it reported
// already changes nothing a Gateway's status reads, and does not wake
// the status writer (a round over every Gateway). A change does.
func TestRepeatedBoundPortsDoNotSignal(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	changed(t, ts, "publish gen 1", func() {
		ts.publish(t, snap(dedicated, "web", 1, []int32{8080}, "10.0.0.1"))
	})
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, "apps", "web-coxswain"))
	send := func(m *discoveryv1.ClientMessage) func() {
		return func() {
			if err := st.Send(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	changed(t, ts, "subscribe", send(subscribe("web-1", dedicated)))
	recvSnapshot(t, st)
	changed(t, ts, "bind 8080", send(nodeStatus(8080)))
	send(nodeStatus(8080))()
	select {
	case <-ts.DataPlaneChanges():
		t.Fatal("the same bound ports again signalled a data-plane change")
	case <-time.After(300 * time.Millisecond):
	}
	changed(t, ts, "bind 8080+9090", send(nodeStatus(8080, 9090)))
	if got := ts.GatewayState("apps", "web", 1); got.Proxies != 1 {
		t.Fatalf("state after the reports: %+v", got)
	}
}

// TestSameGatewaysDoNotSignal: a snapshot that changes no Gateway (new
// endpoints) neither signals a data-plane change when published nor when
// a proxy acks it, since no Gateway's state changed (at 1,000 Gateways
// each signal is a status round over all of them); a new generation does
// both.
func TestSameGatewaysDoNotSignal(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	quiet := func(what string, action func()) {
		t.Helper()
		for drained := false; !drained; {
			select {
			case <-ts.DataPlaneChanges():
			default:
				drained = true
			}
		}
		action()
		select {
		case <-ts.DataPlaneChanges():
			t.Fatalf("%s signalled a data-plane change", what)
		case <-time.After(300 * time.Millisecond):
		}
	}
	changed(t, ts, "publish gen 1", func() {
		ts.publish(t, snap(dedicated, "web", 1, []int32{8080}, "10.0.0.1"))
	})
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, "apps", "web-coxswain"))
	send := func(m *discoveryv1.ClientMessage) func() {
		return func() {
			if err := st.Send(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	changed(t, ts, "subscribe", send(subscribe("web-1", dedicated)))
	changed(t, ts, "the first ack", send(ack(recvSnapshot(t, st))))
	changed(t, ts, "bind 8080", send(nodeStatus(8080)))
	quiet("publishing new endpoints", func() {
		ts.publish(t, snap(dedicated, "web", 1, []int32{8080}, "10.0.0.2"))
	})
	quiet("acking new endpoints", send(ack(recvSnapshot(t, st))))
	if got := ts.GatewayState("apps", "web", 1); got.Ready != 1 {
		t.Fatalf("state after the endpoints' ack: %+v", got)
	}
	changed(t, ts, "publish gen 2", func() {
		ts.publish(t, snap(dedicated, "web", 2, []int32{8080}, "10.0.0.2"))
	})
	changed(t, ts, "ack gen 2", send(ack(recvSnapshot(t, st))))
	if got := ts.GatewayState("apps", "web", 2); got.Ready != 1 {
		t.Fatalf("state after the gen 2 ack: %+v", got)
	}
}
