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
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// differInOneField calls f with a zero T and, for each field in turn, a T
// that differs from it in that field alone.
func differInOneField[T any](t *testing.T, f func(field string, a, b *T)) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	for i := 0; i < typ.NumField(); i++ {
		var a, b T
		v := reflect.ValueOf(&b).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			v.SetInt(1)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
		default:
			t.Fatalf("%s.%s is a %s: teach this test and the reuse checks (reuse.go) about it", typ.Name(), typ.Field(i).Name, v.Kind())
		}
		f(typ.Field(i).Name, &a, &b)
	}
}

// TestEndpointSetFieldsAreReuses: an endpoint set input that differs in
// any one field is not the same input, so a compile cannot take over a
// set compiled from another one.
func TestEndpointSetFieldsAreReuses(t *testing.T) {
	differInOneField(t, func(field string, a, b *snapshot.EndpointSet) {
		if sameEndpointSetInput(a, b) {
			t.Errorf("sameEndpointSetInput ignores EndpointSet.%s", field)
		}
		c := *b
		if !sameEndpointSetInput(b, &c) {
			t.Errorf("a copy of an endpoint set with only %s set is not the same input", field)
		}
	})
}

// TestVirtualHostFieldsAreReuses is TestEndpointSetFieldsAreReuses for
// virtual hosts.
func TestVirtualHostFieldsAreReuses(t *testing.T) {
	differInOneField(t, func(field string, a, b *snapshot.VirtualHost) {
		if sameVirtualHostInput(a, b) {
			t.Errorf("sameVirtualHostInput ignores VirtualHost.%s", field)
		}
	})
	// The same elements, fewer of them, are another list.
	routes := []snapshot.Route{{ID: "a"}, {ID: "b"}}
	if sameVirtualHostInput(&snapshot.VirtualHost{Routes: routes}, &snapshot.VirtualHost{Routes: routes[:1]}) {
		t.Error("a shorter list over the same routes counts as the same")
	}
}

// reuseWorld is a snapshot the reuse test mutates: hosts route to sets,
// some mirror to one, and the listener may carry a ClientIP detection.
type reuseWorld struct {
	rng      *rand.Rand
	sets     map[string][]snapshot.Endpoint
	hosts    map[string][]snapshot.Route
	clientIP int32 // trusted hops of the listener's ClientTraffic; 0: none
	next     int
}

func (w *reuseWorld) setNames() []string {
	names := make([]string, 0, len(w.sets))
	for n := range w.sets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (w *reuseWorld) routesTo(host string) []snapshot.Route {
	names := w.setNames()
	pick := func() string { return names[w.rng.Intn(len(names))] }
	n := 1 + w.rng.Intn(2)
	routes := make([]snapshot.Route, 0, n)
	for i := 0; i < n; i++ {
		w.next++
		r := snapshot.Route{
			ID:       "httproute/default/" + host + ":" + strconv.Itoa(w.next),
			Match:    snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/" + strconv.Itoa(i)}},
			Backends: []snapshot.Backend{{EndpointSet: pick(), Weight: 1}},
		}
		if w.rng.Intn(3) == 0 {
			r.Mirrors = []snapshot.Mirror{{EndpointSet: pick()}}
		}
		if w.rng.Intn(4) == 0 {
			r.ClientIP = &snapshot.ClientIPDetection{TrustedHops: 2}
		}
		routes = append(routes, r)
	}
	return routes
}

func (w *reuseWorld) endpoints() []snapshot.Endpoint {
	w.next++
	return []snapshot.Endpoint{{Address: "10.0." + strconv.Itoa(w.next%250) + ".1", Port: int32(8000 + w.next%1000)}}
}

func (w *reuseWorld) snapshot() *snapshot.Snapshot {
	l := snapshot.Listener{Name: "gateway/default/web/80", Port: 30000, ExternalPort: 80, Protocol: snapshot.ProtocolHTTP}
	if w.clientIP > 0 {
		l.ClientTraffic = &snapshot.ClientTraffic{ClientIP: &snapshot.ClientIPDetection{TrustedHops: w.clientIP}}
	}
	for h, routes := range w.hosts {
		l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: h, Routes: routes})
	}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{l}}
	for _, n := range w.setNames() {
		s.EndpointSets = append(s.EndpointSets, &snapshot.EndpointSet{Name: n, Endpoints: w.sets[n]})
	}
	snapshot.Normalize(s)
	return s
}

// mutate makes one random change, the kinds a discovery delta brings.
func (w *reuseWorld) mutate() {
	hosts := make([]string, 0, len(w.hosts))
	for h := range w.hosts {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	names := w.setNames()
	switch w.rng.Intn(7) {
	case 0: // a set's endpoints change
		w.sets[names[w.rng.Intn(len(names))]] = w.endpoints()
	case 1: // a host's routes change
		h := hosts[w.rng.Intn(len(hosts))]
		w.hosts[h] = w.routesTo(h)
	case 2: // a host is added
		w.next++
		h := "h" + strconv.Itoa(w.next) + ".example.com"
		w.hosts[h] = w.routesTo(h)
	case 3: // a host is removed
		if len(hosts) > 1 {
			delete(w.hosts, hosts[w.rng.Intn(len(hosts))])
		}
	case 4: // the listener's ClientTraffic changes
		w.clientIP = int32(w.rng.Intn(3))
	case 5: // a set is added
		w.next++
		w.sets["default/svc-"+strconv.Itoa(w.next)+":80"] = w.endpoints()
	case 6: // a set is removed, and the routes that used it are retargeted
		if len(names) < 2 {
			return
		}
		gone := names[w.rng.Intn(len(names))]
		delete(w.sets, gone)
		for h, routes := range w.hosts {
			for _, r := range routes {
				uses := slices.ContainsFunc(r.Backends, func(b snapshot.Backend) bool { return b.EndpointSet == gone }) ||
					slices.ContainsFunc(r.Mirrors, func(m snapshot.Mirror) bool { return m.EndpointSet == gone })
				if uses {
					w.hosts[h] = w.routesTo(h)
					break
				}
			}
		}
	}
}

// TestCompileReusesOnlyWhatIsUnchanged drives the compiler through random
// changes, each snapshot reassembled by discovery's Assembler (which hands
// unchanged resources over as the values it decoded before). After every
// change, the state compiled with the last one in force must route every
// host to the routes a fresh compile routes it to, and every pointer it
// holds must be its own: the sets its routes use are its sets, their
// metric handles its own route's, the ClientIP detection they inherit their
// listener's. Unchanged virtual hosts must be taken over, changed ones
// not.
func TestCompileReusesOnlyWhatIsUnchanged(t *testing.T) {
	w := &reuseWorld{rng: rand.New(rand.NewSource(17)), sets: map[string][]snapshot.Endpoint{}, hosts: map[string][]snapshot.Route{}}
	for i := 0; i < 4; i++ {
		w.sets["default/svc-"+strconv.Itoa(i)+":80"] = w.endpoints()
	}
	for i := 0; i < 12; i++ {
		h := "h" + strconv.Itoa(i) + ".example.com"
		w.hosts[h] = w.routesTo(h)
	}
	a := &snapshot.Assembler{Scope: snapshot.SharedPool(), Layout: snapshot.LayoutVirtualHosts}
	m := newMetrics(nil)
	var prev *state
	var prevSrc *snapshot.Snapshot
	reused, compiled := 0, 0
	for step := 0; step < 300; step++ {
		if step > 0 {
			w.mutate()
		}
		res, err := snapshot.ResourcesIn(snapshot.LayoutVirtualHosts, w.snapshot())
		if err != nil {
			t.Fatal(err)
		}
		s, version, err := a.Assemble(res)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		st, err := compileEnv(s, version, prev, m, nil)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		fresh := mustCompile(t, s)
		checkOwnPointers(t, step, st)
		for _, in := range s.EndpointSets {
			var got, want []string
			for _, e := range st.sets.get(in.Name).eps {
				got = append(got, e.addr)
			}
			for _, e := range fresh.sets.get(in.Name).eps {
				want = append(want, e.addr)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: set %s has endpoints %v, a fresh compile %v", step, in.Name, got, want)
			}
		}
		lr, flr := st.router.ports[30000], fresh.router.ports[30000]
		for _, in := range s.Listeners[0].VirtualHosts {
			vh, fvh := lr.byHostname(in.Hostname), flr.byHostname(in.Hostname)
			if got, want := routeIDs(vh), routeIDs(fvh); !slices.Equal(got, want) {
				t.Fatalf("step %d: host %s routes %v, a fresh compile %v", step, in.Hostname, got, want)
			}
			for i, r := range vh.routes {
				if got, want := setNamesOf(r), setNamesOf(fvh.routes[i]); !slices.Equal(got, want) {
					t.Fatalf("step %d: route %s uses %v, a fresh compile %v", step, r.id, got, want)
				}
			}
			if prev == nil {
				continue
			}
			old := prev.router.ports[30000].byHostname(in.Hostname)
			unchanged := old != nil && prevSrc != nil && sameHostIn(prevSrc, in) && setsUnchanged(prev, st, old)
			switch {
			case unchanged && vh != old:
				t.Fatalf("step %d: unchanged host %s was compiled again", step, in.Hostname)
			case !unchanged && vh == old:
				t.Fatalf("step %d: changed host %s was taken over", step, in.Hostname)
			case vh == old:
				reused++
			default:
				compiled++
			}
		}
		prev, prevSrc = st, s
	}
	if reused == 0 || compiled == 0 {
		t.Fatalf("the changes reused %d hosts and compiled %d: the test exercises neither path", reused, compiled)
	}
	t.Logf("%d hosts taken over, %d compiled again", reused, compiled)
}

// sameHostIn reports whether in is, by identity, the virtual host of the
// same name in s (what the Assembler makes of an unchanged resource), and
// the listener's ClientTraffic is the same.
func sameHostIn(s *snapshot.Snapshot, in *snapshot.VirtualHost) bool {
	for _, vh := range s.Listeners[0].VirtualHosts {
		if vh.Hostname == in.Hostname {
			return lists.Same(vh.Routes, in.Routes)
		}
	}
	return false
}

// setsUnchanged reports whether every set the routes of vh use is the same
// compiled set in prev and st, and the listener's ClientTraffic too.
func setsUnchanged(prev, st *state, vh *vhost) bool {
	if prev.router.ports[30000].clientTrafficSrc != st.router.ports[30000].clientTrafficSrc {
		return false
	}
	for _, r := range vh.routes {
		for _, n := range setNamesOf(r) {
			if prev.sets.get(n) != st.sets.get(n) {
				return false
			}
		}
	}
	return true
}

func routeIDs(vh *vhost) []string {
	if vh == nil {
		return nil
	}
	ids := make([]string, 0, len(vh.routes))
	for _, r := range vh.routes {
		ids = append(ids, r.id)
	}
	return ids
}

// setNamesOf lists the sets a route sends to: its backends', then its
// mirrors'.
func setNamesOf(r *route) []string {
	var names []string
	for _, b := range r.backends {
		names = append(names, b.set.name)
	}
	for _, m := range r.mirrors {
		names = append(names, m.set.name)
	}
	return names
}

// checkOwnPointers fails unless every set, metric handle and inherited
// ClientIP detection st's routes hold is st's own.
func checkOwnPointers(t *testing.T, step int, st *state) {
	t.Helper()
	for _, lr := range st.router.ports {
		hosts := slices.Collect(func(yield func(*vhost) bool) {
			for _, vh := range lr.exact.all() {
				yield(vh)
			}
			for _, vh := range lr.wild.all() {
				yield(vh)
			}
			if lr.any != nil {
				yield(lr.any)
			}
		})
		for _, vh := range hosts {
			for _, r := range vh.routes {
				where := fmt.Sprintf("step %d: route %s", step, r.id)
				for _, b := range r.backends {
					if b.set != nil && st.sets.get(b.set.name) != b.set {
						t.Fatalf("%s sends to a set of another state (%s)", where, b.set.name)
					}
				}
				for _, m := range r.mirrors {
					if m.set != nil && st.sets.get(m.set.name) != m.set {
						t.Fatalf("%s mirrors to a set of another state (%s)", where, m.set.name)
					}
				}
				// A route carries its metric handles (a patched
				// listener's hosts taken over keep theirs): they must
				// be the handles of the route itself.
				if r.stats == nil || r.stats.listener != r.listener || r.stats.route != r.id {
					t.Fatalf("%s counts into metric handles of another route", where)
				}
				var inherited *clientIPPolicy
				if lr.clientTraffic != nil {
					inherited = lr.clientTraffic.clientIP
				}
				// A route without its own detection uses its listener's.
				if !routeHasOwnClientIP(st, r) && r.policies.clientIP != inherited {
					t.Fatalf("%s does not use its listener's ClientIP detection", where)
				}
			}
		}
	}
}

// routeHasOwnClientIP reports whether the snapshot route behind r sets its
// own ClientIP detection.
func routeHasOwnClientIP(st *state, r *route) bool {
	for _, l := range st.source.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, in := range vh.Routes {
				if in.ID == r.id {
					return in.ClientIP != nil
				}
			}
		}
	}
	return false
}

// TestPatchListenerEqualsAFullCompile drives a listener of wildcard, exact
// and catch-all hosts through random changes of a few hosts at a time
// (routes changed, hosts added and removed, a set's endpoints changed),
// each snapshot patched by discovery's Assembler as deltas arrive. Every
// compile with the last state in force must patch the listener (few hosts
// changed), index exactly the snapshot's hostnames, and route each of
// them as a fresh compile does; a change of most hosts compiles in full.
func TestPatchListenerEqualsAFullCompile(t *testing.T) {
	w := &reuseWorld{rng: rand.New(rand.NewSource(31)), sets: map[string][]snapshot.Endpoint{}, hosts: map[string][]snapshot.Route{}}
	// Enough sets that a set's change reaches a few hosts.
	for i := 0; i < 40; i++ {
		w.sets["default/svc-"+strconv.Itoa(i)+":80"] = w.endpoints()
	}
	hostname := func(i int) string {
		switch i % 5 {
		case 0:
			return "*.w" + strconv.Itoa(i) + ".example.com"
		case 1:
			if i < 10 {
				return "*"
			}
		}
		return "h" + strconv.Itoa(i) + ".example.com"
	}
	for i := 0; i < 40; i++ {
		h := hostname(i)
		w.hosts[h] = w.routesTo(h)
	}
	a := &snapshot.Assembler{Scope: snapshot.SharedPool(), Layout: snapshot.LayoutVirtualHosts}
	m := newMetrics(nil)
	var prev *state
	var prevRes []snapshot.Resource
	sameHosts := 0
	for step := 0; step < 300; step++ {
		changes := 1 + w.rng.Intn(3)
		if step%50 == 49 {
			changes = 40 // most hosts: a full compile
		}
		for range changes {
			hosts := slices.Sorted(maps.Keys(w.hosts))
			switch w.rng.Intn(4) {
			case 0:
				h := hosts[w.rng.Intn(len(hosts))]
				w.hosts[h] = w.routesTo(h)
			case 1:
				h := hostname(w.rng.Intn(400))
				w.hosts[h] = w.routesTo(h)
			case 2:
				if len(hosts) > 2 {
					delete(w.hosts, hosts[w.rng.Intn(len(hosts))])
				}
			case 3:
				names := w.setNames()
				w.sets[names[w.rng.Intn(len(names))]] = w.endpoints()
			}
		}
		res, err := snapshot.ResourcesIn(snapshot.LayoutVirtualHosts, w.snapshot())
		if err != nil {
			t.Fatal(err)
		}
		var s *snapshot.Snapshot
		if prevRes == nil {
			s, _, err = a.Assemble(res)
		} else {
			upserts, removed := resourceDelta(prevRes, res)
			s, _, err = a.Apply(upserts, removed)
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		prevRes = res
		var patched bool
		if prev != nil {
			c := &compiler{st: &state{stats: map[statsKey]*routeStats{}}, prev: prev, m: m}
			c.st.sets, c.changedSets = compileEndpointSets(s.EndpointSets, prev, nil)
			l := &s.Listeners[0]
			lr := &listenerRouter{name: l.Name, port: l.Port, externalPort: l.ExternalPort, clientTrafficSrc: l.ClientTraffic}
			old := c.previousListener(l, lr.externalPort, lr.tls)
			if old == nil {
				t.Fatalf("step %d: the listener of the last state is not this one's", step)
			}
			lr.clientTraffic = old.clientTraffic
			if lists.Same(l.VirtualHosts, old.src) {
				sameHosts++ // an endpoint refresh: patched through the set users
			}
			if patched, err = c.patchListener(l, lr, old); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if patched != (changes < 40) {
				t.Fatalf("step %d: %d changes, patched %v", step, changes, patched)
			}
		}
		st, err := compileEnv(s, "v", prev, m, nil)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		fresh := mustCompile(t, s)
		checkOwnPointers(t, step, st)
		lr, flr := st.router.ports[30000], fresh.router.ports[30000]
		var indexed []string
		for h := range lr.exact.all() {
			indexed = append(indexed, h)
		}
		for suffix := range lr.wild.all() {
			indexed = append(indexed, "*."+suffix)
		}
		if counted := lr.exact.n + lr.wild.n; counted != len(indexed) {
			t.Fatalf("step %d: the listener counts %d exact and %d wildcard hosts, it indexes %v", step, lr.exact.n, lr.wild.n, indexed)
		}
		if lr.any != nil {
			indexed = append(indexed, "*")
		}
		if want := slices.Sorted(maps.Keys(w.hosts)); !slices.Equal(slices.Sorted(slices.Values(indexed)), want) {
			t.Fatalf("step %d: the listener indexes %v, the snapshot has %v", step, slices.Sorted(slices.Values(indexed)), want)
		}
		for _, in := range s.Listeners[0].VirtualHosts {
			vh, fvh := lr.byHostname(in.Hostname), flr.byHostname(in.Hostname)
			if got, want := routeIDs(vh), routeIDs(fvh); !slices.Equal(got, want) {
				t.Fatalf("step %d: host %s routes %v, a fresh compile %v", step, in.Hostname, got, want)
			}
			for i, r := range vh.routes {
				if got, want := setNamesOf(r), setNamesOf(fvh.routes[i]); !slices.Equal(got, want) {
					t.Fatalf("step %d: route %s uses %v, a fresh compile %v", step, r.id, got, want)
				}
			}
		}
		// Requests choose the host a fresh compile would, for every name
		// the test ever used (those removed too), as sent and upper-case.
		for i := range 400 {
			name := strings.Replace(hostname(i), "*", "x", 1)
			for _, host := range []string{name, strings.ToUpper(name) + ":80"} {
				if got, want := routeIDs(lr.host(host)), routeIDs(flr.host(host)); !slices.Equal(got, want) {
					t.Fatalf("step %d: a request for %s gets routes %v, a fresh compile's %v", step, host, got, want)
				}
			}
		}
		prev = st
	}
	if sameHosts < 10 {
		t.Fatalf("%d steps changed endpoint sets alone: the test exercises too little", sameHosts)
	}
}

// resourceDelta is what discovery sends to bring a proxy from prev to
// next (both in key order): the resources new or changed, and the keys
// gone.
func resourceDelta(prev, next []snapshot.Resource) (upserts []snapshot.Resource, removed []string) {
	old := map[string][]byte{}
	for _, r := range prev {
		old[r.Key] = r.Body
	}
	for _, r := range next {
		if b, ok := old[r.Key]; !ok || !bytes.Equal(b, r.Body) {
			upserts = append(upserts, r)
		}
		delete(old, r.Key)
	}
	for k := range old {
		removed = append(removed, k)
	}
	return upserts, removed
}

// TestUnchangedListenerIsTakenOver: of two HTTP listeners and an HTTPS
// one, a delta that touches only the first's hosts leaves the second's
// compiled form as it was (taken over whole) and compiles the HTTPS one
// again; a change of a set the second's routes use compiles it again.
// Every host routes as a fresh compile routes it.
func TestUnchangedListenerIsTakenOver(t *testing.T) {
	host := func(h, set string) *snapshot.VirtualHost {
		return &snapshot.VirtualHost{Hostname: h, Routes: []snapshot.Route{{ID: "httproute/default/" + h + ":" + set,
			Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}}, Backends: []snapshot.Backend{{EndpointSet: set, Weight: 1}}}}}
	}
	cert := testCert(t, "h0.example.com")
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{cert}}
	for _, port := range []int32{30001, 30002, 30443} {
		l := snapshot.Listener{Name: "l" + strconv.Itoa(int(port)), Port: port, Protocol: snapshot.ProtocolHTTP}
		if port == 30443 {
			l.Protocol = snapshot.ProtocolHTTPS
			l.TLS = &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: cert.Name}}}
		}
		for i := range 3 {
			l.VirtualHosts = append(l.VirtualHosts, host("h"+strconv.Itoa(i)+".example.com", "default/svc-"+strconv.Itoa(int(port%10))+":80"))
		}
		s.Listeners = append(s.Listeners, l)
	}
	for _, n := range []string{"default/svc-1:80", "default/svc-2:80", "default/svc-3:80"} {
		s.EndpointSets = append(s.EndpointSets, &snapshot.EndpointSet{Name: n, Endpoints: []snapshot.Endpoint{{Address: "10.0.0.1", Port: 80}}})
	}
	snapshot.Normalize(s)
	res, err := snapshot.ResourcesIn(snapshot.LayoutVirtualHosts, s)
	if err != nil {
		t.Fatal(err)
	}
	a := &snapshot.Assembler{Scope: snapshot.SharedPool(), Layout: snapshot.LayoutVirtualHosts}
	first, _, err := a.Assemble(res)
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(nil)
	prev, err := compileEnv(first, "v1", nil, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	check := func(st *state, s *snapshot.Snapshot) {
		t.Helper()
		fresh := mustCompile(t, s)
		checkOwnPointers(t, 0, st)
		for _, l := range s.Listeners {
			for _, in := range l.VirtualHosts {
				vh, fvh := st.router.ports[l.Port].byHostname(in.Hostname), fresh.router.ports[l.Port].byHostname(in.Hostname)
				if got, want := routeIDs(vh), routeIDs(fvh); !slices.Equal(got, want) {
					t.Fatalf("listener %d host %s routes %v, a fresh compile %v", l.Port, in.Hostname, got, want)
				}
				for i, r := range vh.routes {
					if r.backends[0].set != st.sets.get(fvh.routes[i].backends[0].set.name) {
						t.Fatalf("listener %d host %s sends to a set not the state's", l.Port, in.Hostname)
					}
				}
			}
		}
	}
	// Only the first listener's hosts change.
	second, _, err := a.Apply([]snapshot.Resource{{Key: snapshot.VirtualHostKey("30001", "h9.example.com"), Body: body(host("h9.example.com", "default/svc-1:80"))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := compileEnv(second, "v2", prev, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.router.ports[30002] != prev.router.ports[30002] {
		t.Error("an untouched listener was compiled again")
	}
	if key := (statsKey{"l30002", ""}); st.stats[key] == nil || st.stats[key] != prev.router.ports[30002].notFound.stats {
		t.Error("the untouched listener's not-found route's metric handles were not handed on")
	}
	if st.router.ports[30001] == prev.router.ports[30001] || st.router.ports[30443] == prev.router.ports[30443] {
		t.Error("a changed listener, or an HTTPS one, was taken over")
	}
	check(st, second)
	// A set the second listener's routes use changes.
	third, _, err := a.Apply([]snapshot.Resource{{Key: "endpoints|default/svc-2:80",
		Body: body(snapshot.EndpointSet{Name: "default/svc-2:80", Endpoints: []snapshot.Endpoint{{Address: "10.0.0.2", Port: 80}}})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := compileEnv(third, "v3", st, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st2.router.ports[30002] == st.router.ports[30002] {
		t.Error("a listener whose routes use a changed set was taken over")
	}
	if st2.router.ports[30001] != st.router.ports[30001] {
		t.Error("a listener whose routes use no changed set was compiled again")
	}
	check(st2, third)
}

// TestCompileEndpointSetsByName: a state's sets are in name order
// whatever the snapshot's order; the very set in force is taken over,
// an equal one too, and the sets compiled anew or gone are the changed
// ones.
func TestCompileEndpointSetsByName(t *testing.T) {
	set := func(name, addr string) *snapshot.EndpointSet {
		return &snapshot.EndpointSet{Name: name, Endpoints: []snapshot.Endpoint{{Address: addr, Port: 80}}}
	}
	a, b, c := set("ns/a:80", "10.0.0.1"), set("ns/b:80", "10.0.0.2"), set("ns/c:80", "10.0.0.3")
	first, changed := compileEndpointSets([]*snapshot.EndpointSet{a, b, c}, nil, nil)
	if len(first.list) != 3 || len(changed) != 3 {
		t.Fatalf("first: %d sets, changed %v", len(first.list), changed)
	}
	prev := &state{sets: first}
	if again, changed := compileEndpointSets([]*snapshot.EndpointSet{a, b, c}, prev, nil); !slices.Equal(again.list, first.list) || changed != nil {
		t.Errorf("the very sets in force gave %d sets, changed %v", len(again.list), changed)
	}
	c2 := *c // equal, not the same
	d := set("ns/d:80", "10.0.0.4")
	for _, in := range [][]*snapshot.EndpointSet{{a, &c2, d}, {d, &c2, a}, {&c2, a, d}} {
		sets, changed := compileEndpointSets(in, prev, nil)
		var names []string
		for _, es := range sets.list {
			names = append(names, es.name)
		}
		if !slices.Equal(names, []string{"ns/a:80", "ns/c:80", "ns/d:80"}) {
			t.Fatalf("sets %v, want them in name order", names)
		}
		if sets.get("ns/a:80") != first.get("ns/a:80") || sets.get("ns/c:80") != first.get("ns/c:80") {
			t.Error("an unchanged set was compiled again")
		}
		if sets.get("ns/b:80") != nil || sets.get("ns/d:80") == nil {
			t.Error("get finds a set gone or misses one added")
		}
		if !maps.Equal(changed, map[string]bool{"ns/b:80": true, "ns/d:80": true}) {
			t.Errorf("changed %v, want the set gone and the one added", changed)
		}
	}
}
