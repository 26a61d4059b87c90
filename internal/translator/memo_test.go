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

package translator

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// TestMemoEqualsTranslate: over random sequences of changes to every
// golden input (routes edited, added, removed or only re-versioned;
// Services, Gateways, grants and policies touched or edited; EndpointSlices
// churned), a Memo's translation equals a fresh one at every step, and the
// Memo does reuse compilations.
func TestMemoEqualsTranslate(t *testing.T) {
	for _, kind := range memoKinds {
		t.Run(kind.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(23))
			var hits, misses int
			for in, res := range goldenResources(t) {
				v := &versioner{}
				v.stampAll(res)
				steps := memoSteps{m: kind.new()}
				for step := 0; step < 16; step++ {
					if step > 0 {
						res = v.change(rng, res, step)
					}
					steps.next(t, fmt.Sprintf("%s step %d", in, step), res)
					hits, misses = hits+steps.m.lastHits, misses+steps.m.lastMisses
				}
			}
			t.Logf("compilations reused %d, made %d", hits, misses)
			if hits == 0 || hits < misses/4 {
				t.Fatalf("the Memo reused %d compilations and made %d: it is not doing its job", hits, misses)
			}
		})
	}
}

// memoKinds are the Memos the randomized tests run: NewMemo's, which
// reads the objects of a list it had again, and NewStoreMemo's, which
// takes them as they were. Their sequences change copies, never an
// object in place.
var memoKinds = []struct {
	name string
	new  func() *Memo
}{{"NewMemo", NewMemo}, {"NewStoreMemo", NewStoreMemo}}

// memoSteps translates a sequence of Resources with one Memo, each
// checked against a fresh translation.
type memoSteps struct {
	m        *Memo
	last     *Result
	lastJSON []byte
}

// next translates res with the Memo and checks that the Result and its
// endpoint sources equal a fresh translation's, and that the last Result
// is as it was: Results share what did not change (route lists,
// statuses, compiled routes), and none may be modified afterwards.
func (s *memoSteps) next(t testing.TB, step string, res *Resources) *Result {
	t.Helper()
	got, want := s.m.Translate(res), Translate(res)
	g, w := mustJSON(t, got), mustJSON(t, want)
	if !bytes.Equal(g, w) {
		t.Fatalf("%s: memoized and fresh translations differ:\n%s", step, firstDifference(w, g))
	}
	if !reflect.DeepEqual(sourcesBySet(got), sourcesBySet(want)) {
		t.Fatalf("%s: endpoint sources differ: %v, want %v", step, sourcesBySet(got), sourcesBySet(want))
	}
	if s.last != nil {
		if again := mustJSON(t, s.last); !bytes.Equal(again, s.lastJSON) {
			t.Fatalf("%s: the translation modified the last one's Result:\n%s", step, firstDifference(s.lastJSON, again))
		}
	}
	s.last, s.lastJSON = got, g
	return got
}

// memoOf is a Memo that translated res, versioned first, and the
// versioner that did it.
func memoOf(res *Resources) (*Memo, *versioner) {
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	m.Translate(res)
	return m, v
}

// churned is in with some EndpointSlices changed (churnSlices), versioned.
func (v *versioner) churned(rng *rand.Rand, in []*discoveryv1.EndpointSlice, step int) []*discoveryv1.EndpointSlice {
	out := churnSlices(rng, in, step)
	for _, s := range out {
		v.stamp(s)
	}
	return out
}

// TestMemoTrustsOnlyVersionedInputs: without resourceVersions a Memo
// compiles everything, every time.
func TestMemoTrustsOnlyVersionedInputs(t *testing.T) {
	res := generate(50, 5, 1)
	m := NewMemo()
	m.Translate(res)
	m.Translate(res)
	if m.lastHits != 0 {
		t.Fatalf("reused %d compilations of unversioned inputs", m.lastHits)
	}
	(&versioner{}).stampAll(res)
	m.Translate(res)
	m.Translate(res)
	if m.lastHits == 0 || m.lastMisses != 0 {
		t.Fatalf("versioned and unchanged: reused %d, compiled %d; want all reused", m.lastHits, m.lastMisses)
	}
}

// versioner gives objects UIDs and resourceVersions, as an apiserver
// would.
type versioner struct{ n int }

func (v *versioner) next() string { v.n++; return strconv.Itoa(v.n) }

// stamp versions one object as the apiserver versions a change of its
// spec: a new resourceVersion and the next generation; a new object also
// gets a UID.
func (v *versioner) stamp(o metav1.Object) {
	if o.GetUID() == "" {
		o.SetUID(types.UID("uid-" + v.next()))
	}
	o.SetResourceVersion(v.next())
	o.SetGeneration(o.GetGeneration() + 1)
}

// stampStatus versions one object as the apiserver versions a write of
// its status: a new resourceVersion, the same generation.
func (v *versioner) stampStatus(o metav1.Object) {
	o.SetResourceVersion(v.next())
}

// stampAll versions every object of res in place.
func (v *versioner) stampAll(res *Resources) {
	eachObjectField(res, func(f reflect.Value) {
		for i := range f.Len() {
			if !f.Index(i).IsNil() {
				v.stamp(f.Index(i).Interface().(metav1.Object))
			}
		}
	})
	if res.SharedProxyService != nil {
		v.stamp(res.SharedProxyService)
	}
}

// eachObjectField calls fn with every []*Object field of res.
func eachObjectField(res *Resources, fn func(reflect.Value)) {
	rv := reflect.ValueOf(res).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		if f.Kind() == reflect.Slice && f.Type().Elem().Implements(objectType) {
			fn(f)
		}
	}
}

// change returns a copy of res with one to three random changes; changed
// objects are copies with a new resourceVersion (res is not modified).
func (v *versioner) change(rng *rand.Rand, res *Resources, step int) *Resources {
	next := *res
	for range 1 + rng.Intn(3) {
		switch rng.Intn(12) {
		case 0, 1, 2:
			next.HTTPRoutes = v.changeHTTPRoute(rng, next.HTTPRoutes, step)
		case 3:
			next.GRPCRoutes = changeSome(rng, next.GRPCRoutes, v, func(r *gwv1.GRPCRoute) *gwv1.GRPCRoute {
				if len(r.Spec.Rules) > 0 && len(r.Spec.Rules[0].BackendRefs) > 0 {
					if p := r.Spec.Rules[0].BackendRefs[0].Port; p != nil {
						r.Spec.Rules[0].BackendRefs[0].Port = ptr.To(*p + 1)
					}
				}
				return r
			})
		case 4:
			next.EndpointSlices = v.churned(rng, next.EndpointSlices, step)
		case 5: // a Service port renumbered, or the Service removed
			if rng.Intn(3) == 0 && len(next.Services) > 0 {
				i := rng.Intn(len(next.Services))
				next.Services = append(next.Services[:i:i], next.Services[i+1:]...)
				break
			}
			next.Services = changeSome(rng, next.Services, v, func(s *corev1.Service) *corev1.Service {
				for i := range s.Spec.Ports {
					s.Spec.Ports[i].Port++
				}
				return s
			})
		case 6: // a Gateway's listener renumbered (a new generation)
			next.Gateways = changeSome(rng, next.Gateways, v, func(g *gwv1.Gateway) *gwv1.Gateway {
				if len(g.Spec.Listeners) > 0 {
					g.Spec.Listeners[0].Port++
				}
				g.Generation++
				return g
			})
		case 7: // a ReferenceGrant removed
			if len(next.ReferenceGrants) > 0 {
				i := rng.Intn(len(next.ReferenceGrants))
				next.ReferenceGrants = append(next.ReferenceGrants[:i:i], next.ReferenceGrants[i+1:]...)
			}
		case 8: // every HTTPRoute a new object at the same resourceVersion (a relist)
			relisted := make([]*gwv1.HTTPRoute, len(next.HTTPRoutes))
			for i, r := range next.HTTPRoutes {
				if r != nil {
					relisted[i] = r.DeepCopy()
				}
			}
			next.HTTPRoutes = relisted
		default: // any other object re-versioned, unchanged (as our status writes do)
			v.touchAny(rng, &next)
		}
	}
	return &next
}

// changeHTTPRoute edits, removes, adds or re-versions one HTTPRoute.
func (v *versioner) changeHTTPRoute(rng *rand.Rand, in []*gwv1.HTTPRoute, step int) []*gwv1.HTTPRoute {
	if len(in) == 0 {
		return in
	}
	i := rng.Intn(len(in))
	if in[i] == nil {
		return in
	}
	out := append(in[:0:0], in...)
	switch rng.Intn(7) {
	case 0: // removed
		return append(out[:i], out[i+1:]...)
	case 1: // a copy under a new name
		c := in[i].DeepCopy()
		c.Name += fmt.Sprintf("-copy%d", step)
		c.UID = ""
		v.stamp(c)
		return append(out, c)
	}
	c := in[i].DeepCopy()
	r := c.Spec.Rules
	switch rng.Intn(6) {
	case 5: // a backend moved to another Service of its namespace (svc-N
		// lives in ns-(N mod namespaces): N plus a multiple of 4 is in
		// the same one when there are 2 or 4), which may be one no route
		// used, or none
		if len(r) > 0 && len(r[0].BackendRefs) > 0 {
			var n int
			if _, err := fmt.Sscanf(string(r[0].BackendRefs[0].Name), "svc-%d", &n); err == nil {
				r[0].BackendRefs[0].Name = gwv1.ObjectName(fmt.Sprintf("svc-%d", n+4*(1+rng.Intn(8))))
			}
		}
	case 0: // a path changed
		if len(r) > 0 && len(r[0].Matches) > 0 && r[0].Matches[0].Path != nil {
			r[0].Matches[0].Path.Value = ptr.To(fmt.Sprintf("/changed%d", step))
		}
	case 1: // a backend port changed
		if len(r) > 0 && len(r[0].BackendRefs) > 0 && r[0].BackendRefs[0].Port != nil {
			r[0].BackendRefs[0].Port = ptr.To(*r[0].BackendRefs[0].Port + 1)
		}
	case 2: // a backend that does not exist
		if len(r) > 0 && len(r[0].BackendRefs) > 0 {
			r[0].BackendRefs[0].Name = "missing"
		}
	case 3: // a hostname added
		c.Spec.Hostnames = append(c.Spec.Hostnames, gwv1.Hostname(fmt.Sprintf("h%d.example.com", step)))
	case 4: // a rule removed
		if len(r) > 0 {
			c.Spec.Rules = r[1:]
		}
	}
	v.stamp(c)
	out[i] = c
	return out
}

// changeSome replaces one random object of in by fn(a deep copy), newly
// versioned.
func changeSome[T any, PT interface {
	*T
	metav1.Object
	DeepCopy() PT
}](rng *rand.Rand, in []PT, v *versioner, fn func(PT) PT) []PT {
	if len(in) == 0 {
		return in
	}
	i := rng.Intn(len(in))
	if in[i] == nil {
		return in
	}
	out := append(in[:0:0], in...)
	c := fn(in[i].DeepCopy())
	v.stamp(c)
	out[i] = c
	return out
}

// touchAny gives a random object of any kind a new resourceVersion.
func (v *versioner) touchAny(rng *rand.Rand, res *Resources) {
	var fields []reflect.Value
	eachObjectField(res, func(f reflect.Value) {
		if f.Len() > 0 {
			fields = append(fields, f)
		}
	})
	if len(fields) == 0 {
		return
	}
	f := fields[rng.Intn(len(fields))]
	i := rng.Intn(f.Len())
	if f.Index(i).IsNil() {
		return
	}
	c := f.Index(i).Interface().(runtime.Object).DeepCopyObject()
	v.stamp(c.(metav1.Object))
	cp := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
	reflect.Copy(cp, f)
	cp.Index(i).Set(reflect.ValueOf(c))
	f.Set(cp)
}

// translateOneChange translates res with a Memo, then res with route 7
// edited by edit and re-versioned, and returns both Results and the
// edited route; the second must equal a fresh translation.
func translateOneChange(t *testing.T, res *Resources, edit func(*gwv1.HTTPRoute)) (before, after *Result, changed *gwv1.HTTPRoute) {
	t.Helper()
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	before = m.Translate(res)
	next := *res
	next.HTTPRoutes = append(res.HTTPRoutes[:0:0], res.HTTPRoutes...)
	changed = res.HTTPRoutes[7].DeepCopy()
	edit(changed)
	v.stamp(changed)
	next.HTTPRoutes[7] = changed
	after = m.Translate(&next)
	if g, w := mustJSON(t, after), mustJSON(t, Translate(&next)); !bytes.Equal(g, w) {
		t.Fatalf("memoized and fresh translations differ:\n%s", firstDifference(w, g))
	}
	return before, after, changed
}

// TestMemoSharesUnchangedVirtualHosts: after one route changes, every
// virtual host it is not in keeps the very route list of the last
// translation (what lets discovery skip encoding it), and its own host
// gets a new one.
func TestMemoSharesUnchangedVirtualHosts(t *testing.T) {
	before, after, changed := translateOneChange(t, generate(400, 5, 1), func(r *gwv1.HTTPRoute) {
		r.Spec.Rules[1].Matches[0].Path.Value = ptr.To("/changed")
	})
	old := map[string]*snapshot.Route{}
	for _, l := range before.Snapshots[0].Listeners {
		for _, vh := range l.VirtualHosts {
			if len(vh.Routes) > 0 {
				old[snapshot.ListenerKey(&l)+"|"+vh.Hostname] = &vh.Routes[0]
			}
		}
	}
	host := string(changed.Spec.Hostnames[0])
	shared, fresh := 0, 0
	for _, l := range after.Snapshots[0].Listeners {
		for _, vh := range l.VirtualHosts {
			if len(vh.Routes) == 0 {
				continue
			}
			same := old[snapshot.ListenerKey(&l)+"|"+vh.Hostname] == &vh.Routes[0]
			switch {
			case vh.Hostname == host && same:
				t.Fatalf("host %s of the changed route kept its old route list", host)
			case vh.Hostname == host:
				fresh++
			case !same:
				t.Fatalf("host %s, untouched, got a new route list", vh.Hostname)
			default:
				shared++
			}
		}
	}
	if fresh == 0 || shared < 100 {
		t.Fatalf("%d hosts shared their route list and %d did not; want >= 100 and > 0", shared, fresh)
	}
}

// TestHostsShareACompiledRoute: the virtual hosts a route with one match
// is served on take its compiled route as their route list, all the same
// one, rather than a copy each (at 10,000 routes the copies were 2.9 MB
// of the controller's heap, each made at its own time); a host with more
// than one route gets a list of its own.
func TestHostsShareACompiledRoute(t *testing.T) {
	res := generate(2, 1, 1)
	r := res.HTTPRoutes[0]
	r.Spec.Hostnames = []gwv1.Hostname{"a.example.com", "b.example.com", "c.example.com"}
	r.Spec.Rules = r.Spec.Rules[:1]
	r.Spec.Rules[0].Matches = r.Spec.Rules[0].Matches[:1]
	res.HTTPRoutes[1].Spec.Hostnames = []gwv1.Hostname{"c.example.com"}
	v := &versioner{}
	v.stampAll(res)
	for _, out := range []*Result{Translate(res), NewMemo().Translate(res)} {
		lists := map[string]*snapshot.Route{}
		for _, l := range out.Snapshots[0].Listeners {
			for _, vh := range l.VirtualHosts {
				if len(vh.Routes) > 0 {
					lists[l.Name+"|"+vh.Hostname] = &vh.Routes[0]
				}
			}
		}
		a, b, c := lists["gateway/infra/gw-0/80|a.example.com"], lists["gateway/infra/gw-0/443|b.example.com"], lists["gateway/infra/gw-0/80|c.example.com"]
		if a == nil || b == nil || c == nil {
			t.Fatalf("hosts missing: %v", lists)
		}
		if a != b {
			t.Error("a.example.com and b.example.com, served by one compiled route, got a copy each")
		}
		if c == a {
			t.Error("c.example.com, served by two routes, shares the list of a.example.com")
		}
	}
}

// TestHostsShareARouteOfManyRules: a route of several rules, listed in
// no precedence order, compiles them in precedence order, and the hosts
// it alone serves take that list as theirs (as hostRoutes would have
// sorted it), not a copy each; a host it shares with another route gets
// a list of its own, in the same order.
func TestHostsShareARouteOfManyRules(t *testing.T) {
	res := generate(2, 1, 1)
	r := res.HTTPRoutes[0]
	r.Spec.Hostnames = []gwv1.Hostname{"a.example.com", "b.example.com", "c.example.com"}
	prefix := gwv1.PathMatchPathPrefix
	r.Spec.Rules[0].Matches = append(r.Spec.Rules[0].Matches, gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr.To("/")}})
	r.Spec.Rules = append([]gwv1.HTTPRouteRule{{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr.To("/a")}}}}}, r.Spec.Rules...)
	res.HTTPRoutes[1].Spec.Hostnames = []gwv1.Hostname{"c.example.com"}
	v := &versioner{}
	v.stampAll(res)
	for _, out := range []*Result{Translate(res), NewMemo().Translate(res)} {
		lists := map[string][]snapshot.Route{}
		for _, l := range out.Snapshots[0].Listeners {
			for _, vh := range l.VirtualHosts {
				lists[l.Name+"|"+vh.Hostname] = vh.Routes
			}
		}
		a, b, c := lists["gateway/infra/gw-0/80|a.example.com"], lists["gateway/infra/gw-0/443|b.example.com"], lists["gateway/infra/gw-0/80|c.example.com"]
		if &a[0] != &b[0] || len(a) != len(b) {
			t.Error("a.example.com and b.example.com, served by one compiled route, got a copy each")
		}
		ids := func(routes []snapshot.Route) []string {
			var out []string
			for _, rt := range routes {
				out = append(out, rt.ID+" "+rt.Match.Path.Value)
			}
			return out
		}
		// Exact first, then the longest prefix, the older route first
		// where they tie.
		if want := []string{"httproute/ns-0/route-0:1 /r0/exact", "httproute/ns-0/route-0:2 /r0", "httproute/ns-0/route-0:0 /a",
			"httproute/ns-0/route-0:1 /"}; !slices.Equal(ids(a), want) {
			t.Errorf("a.example.com's routes\n%q\nwant\n%q", ids(a), want)
		}
		if want := []string{"httproute/ns-0/route-0:1 /r0/exact", "httproute/ns-0/route-1:0 /r1/exact", "httproute/ns-0/route-0:2 /r0",
			"httproute/ns-0/route-1:1 /r1", "httproute/ns-0/route-0:0 /a", "httproute/ns-0/route-0:1 /"}; !slices.Equal(ids(c), want) {
			t.Errorf("c.example.com's routes\n%q\nwant\n%q", ids(c), want)
		}
	}
}

// TestMemoSharesUnchangedParents: a route unchanged since the last
// translation is reported with the very parent statuses it got then (the
// status writer settles it by their identity, without a digest); the
// changed route gets new ones.
func TestMemoSharesUnchangedParents(t *testing.T) {
	before, after, changed := translateOneChange(t, generate(100, 5, 3), func(r *gwv1.HTTPRoute) { r.Generation++ })
	old := map[types.NamespacedName]*gwv1.RouteParentStatus{}
	for _, rs := range before.HTTPRoutes {
		old[rs.NamespacedName] = &rs.Parents[0]
	}
	if len(after.HTTPRoutes) != 100 {
		t.Fatalf("%d route statuses, want 100", len(after.HTTPRoutes))
	}
	for _, rs := range after.HTTPRoutes {
		same := old[rs.NamespacedName] == &rs.Parents[0]
		if rs.Name == changed.Name && same {
			t.Fatalf("the changed route %s kept its parent statuses", rs.Name)
		}
		if rs.Name != changed.Name && !same {
			t.Fatalf("route %s, unchanged, got new parent statuses", rs.Name)
		}
	}
}

// TestMemoIgnoresOurStatusWrites: a Gateway whose status alone changed
// (a new resourceVersion, the same generation: what every attachedRoutes
// update is) leaves every compilation reusable; a new label does not.
func TestMemoIgnoresOurStatusWrites(t *testing.T) {
	res := generate(50, 5, 1)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	m.Translate(res)
	next := *res
	gw := res.Gateways[0].DeepCopy()
	gw.Status.Listeners = []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: 51}}
	v.stampStatus(gw)
	next.Gateways = []*gwv1.Gateway{gw}
	m.Translate(&next)
	if m.lastMisses != 0 {
		t.Fatalf("a status-only Gateway update made %d compilations", m.lastMisses)
	}
	labelled := gw.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	v.stampStatus(labelled)
	next.Gateways = []*gwv1.Gateway{labelled}
	m.Translate(&next)
	if m.lastHits != 0 {
		t.Fatalf("a relabelled Gateway still reused %d compilations", m.lastHits)
	}
}

// TestMemoTakesARouteStatusWriteForTheSameRoute: a route whose status
// alone was written (a new object and resourceVersion, the same
// generation, labels, annotations and deletionTimestamp) is not compiled
// again, and its entry now holds the new object; a route relabelled,
// annotated, being deleted or with a new spec is compiled again. Every
// translation equals a fresh one.
func TestMemoTakesARouteStatusWriteForTheSameRoute(t *testing.T) {
	res := generate(50, 5, 1)
	v := &versioner{}
	v.stampAll(res)
	steps := memoSteps{m: NewMemo()}
	steps.next(t, "start", res)
	for _, c := range []struct {
		what     string
		change   func(r *gwv1.HTTPRoute)
		compiled bool
	}{
		{"its status written", func(r *gwv1.HTTPRoute) {
			r.Status.Parents = append(r.Status.Parents, gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: "web"}, ControllerName: "example.com/other"})
			v.stampStatus(r)
		}, false},
		{"relabelled", func(r *gwv1.HTTPRoute) { r.Labels = map[string]string{"team": "a"}; v.stampStatus(r) }, true},
		{"annotated", func(r *gwv1.HTTPRoute) { r.Annotations = map[string]string{"note": "b"}; v.stampStatus(r) }, true},
		{"being deleted", func(r *gwv1.HTTPRoute) { r.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}; v.stampStatus(r) }, true},
		{"its spec changed", func(r *gwv1.HTTPRoute) { r.Spec.Hostnames = append(r.Spec.Hostnames, "new.example.com"); v.stamp(r) }, true},
	} {
		next := *res
		next.HTTPRoutes = slices.Clone(res.HTTPRoutes)
		r := res.HTTPRoutes[7].DeepCopy()
		c.change(r)
		next.HTTPRoutes[7] = r
		steps.next(t, c.what, &next)
		if compiled := steps.m.lastMisses > 0; compiled != c.compiled {
			t.Errorf("a route %s: %d compilations, want them %v", c.what, steps.m.lastMisses, c.compiled)
		}
		if mr := steps.m.byMeta[&r.ObjectMeta]; mr == nil || mr.meta != &r.ObjectMeta || mr.rv != r.ResourceVersion {
			t.Errorf("a route %s: its entry does not hold the new object at its resourceVersion", c.what)
		}
		// Back to the route as it was, for the next case.
		steps.next(t, c.what+", undone", res)
	}
}

// TestEnvIDsDigestIsEnvDigest: through random changes of the golden
// inputs (objects replaced by new versions, removed, added), and an object
// changed in place under a new resourceVersion, the remembered ids give
// envDigest's digest, and forget the objects no longer present. Then a
// Gateway's status write (a new object of the same id) is found the same
// without a sum, and a copy of another Gateway in its place is not. The
// same holds of a NewStoreMemo's ids (fixed), without the changes in
// place, which its inputs never have.
func TestEnvIDsDigestIsEnvDigest(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		t.Run(fmt.Sprintf("fixed=%v", fixed), func(t *testing.T) { testEnvIDsDigest(t, fixed) })
	}
}

func testEnvIDsDigest(t *testing.T, fixed bool) {
	rng := rand.New(rand.NewSource(41))
	statusWrites := 0
	for in, res := range goldenResources(t) {
		v := &versioner{}
		v.stampAll(res)
		ids := envIDs{fixed: fixed}
		for step := 0; step < 14; step++ {
			if step > 0 {
				res = v.change(rng, res, step)
			}
			if step == 6 && !fixed && len(res.Gateways) > 0 && res.Gateways[0] != nil {
				// The same object, changed in place.
				g := res.Gateways[0]
				g.Labels = map[string]string{"step": strconv.Itoa(step)}
				v.stamp(g)
			}
			if step == 8 && len(res.Gateways) > 0 {
				// One object twice in a list.
				c := *res
				c.Gateways = append(slices.Clone(res.Gateways), res.Gateways[0])
				res = &c
			}
			if step == 9 && len(res.Services) > 0 {
				// One object in two lists, then changed in place.
				c := *res
				c.DedicatedServices = append(slices.Clone(res.DedicatedServices), res.Services[0])
				res = &c
			}
			if step == 10 && !fixed && len(res.DedicatedServices) > 0 {
				s := res.DedicatedServices[len(res.DedicatedServices)-1]
				s.Labels = map[string]string{"step": strconv.Itoa(step)}
				v.stamp(s)
			}
			if step == 11 && len(res.DedicatedServices) > 0 && len(res.Services) > 1 {
				// An object of another list in place of one: as many
				// objects, each seen last time.
				c := *res
				c.DedicatedServices = slices.Clone(res.DedicatedServices)
				c.DedicatedServices[len(c.DedicatedServices)-1] = res.Services[1]
				res = &c
			}
			if step == 12 || step == 13 {
				// A new list of values, as long as the last one.
				c := *res
				c.InternalPorts = []portalloc.Assignment{{Key: portalloc.Key{Namespace: "default", Name: "gw", Port: 80}, Internal: int32(30000 + step)}}
				res = &c
			}
			// Twice, the second time with nothing changed (the fields'
			// remembered sums).
			// The second digest takes every list as the same one: it
			// forgets no object.
			var gotOK bool
			remembered := 0
			for range 2 {
				var got [sha256.Size]byte
				got, gotOK = ids.digest(res)
				want, wantOK := envDigest(res)
				if got != want || gotOK != wantOK {
					t.Fatalf("%s step %d: remembered ids digest %x (%v), envDigest %x (%v)", in, step, got, gotOK, want, wantOK)
				}
				for key, x := range ids.byObject { // the sweep of walked lists is a full one's
					if x.gen != ids.gen && !ids.stillListed(x) {
						t.Fatalf("%s step %d: %T %s is listed no more and still remembered", in, step, key, x.id)
					}
				}
				if gotOK && remembered > 0 && len(ids.byObject) != remembered {
					t.Fatalf("%s step %d: %d ids remembered, then %d with nothing changed", in, step, remembered, len(ids.byObject))
				}
				remembered = len(ids.byObject)
			}
			if n := envObjects(res); gotOK && len(ids.byObject) > n {
				t.Fatalf("%s step %d: %d ids remembered for %d objects", in, step, len(ids.byObject), n)
			}

		}
		// Two Gateways of different ids, in a list that holds no object
		// twice and no nil (a field that does is summed every time).
		const first = 0
		other := slices.IndexFunc(res.Gateways, func(g *gwv1.Gateway) bool {
			return g != nil && res.Gateways[first] != nil && g.UID != res.Gateways[first].UID
		})
		if other < 0 || slices.Contains(res.Gateways, nil) || len(uniqueObjects(res.Gateways)) != len(res.Gateways) {
			continue
		}
		digest := func(what string, res *Resources) {
			t.Helper()
			got, gotOK := ids.digest(res)
			if want, wantOK := envDigest(res); got != want || gotOK != wantOK {
				t.Fatalf("%s, %s: remembered ids digest %x (%v), envDigest %x (%v)", in, what, got, gotOK, want, wantOK)
			}
		}
		// The Gateways as a new list of the same objects, walked.
		walked := *res
		walked.Gateways = slices.Clone(res.Gateways)
		digest("the same Gateways in a new list", &walked)
		// A status write: a new object of that Gateway's id. The field is
		// found the same without a sum.
		written := walked
		written.Gateways = slices.Clone(walked.Gateways)
		g := walked.Gateways[first].DeepCopy()
		g.Status.Conditions = append(g.Status.Conditions, metav1.Condition{Type: "Written", Status: metav1.ConditionTrue})
		v.stampStatus(g)
		written.Gateways[first] = g
		before := ids.replaced
		digest("a Gateway's status written", &written)
		if ids.replaced != before+1 {
			t.Fatalf("%s: a Gateway's status write was not taken for the same Gateways (%d fields)", in, ids.replaced-before)
		}
		// A new object with another Gateway's id in place of that one:
		// as many objects, but other ids.
		swapped := written
		swapped.Gateways = slices.Clone(written.Gateways)
		swapped.Gateways[first] = written.Gateways[other].DeepCopy()
		before = ids.replaced
		digest("a copy of another Gateway in its place", &swapped)
		if ids.replaced != before {
			t.Fatalf("%s: a copy of another Gateway was taken for a status write", in)
		}
		statusWrites++
	}
	if statusWrites < 5 {
		t.Fatalf("status writes tried on %d inputs only", statusWrites)
	}
	t.Logf("status writes tried on %d inputs", statusWrites)
}

// TestStoreMemoTakesAListItHadUnread: a NewStoreMemo's ids take a list
// of objects the last digest had as it was without reading them, so an
// object changed in place (which a store's never is) goes unseen; a
// NewMemo's see it.
func TestStoreMemoTakesAListItHadUnread(t *testing.T) {
	res := generateServices(40, 2, 1, 40)
	(&versioner{}).stampAll(res)
	for _, fixed := range []bool{false, true} {
		ids := envIDs{fixed: fixed}
		before, ok := ids.digest(res)
		if !ok {
			t.Fatal("the generated inputs have no digest")
		}
		s := res.Services[len(res.Services)/2]
		was := s.DeepCopy()
		s.Labels, s.ResourceVersion = map[string]string{"changed": "in place"}, s.ResourceVersion+"0"
		after, _ := ids.digest(res)
		*s = *was
		if seen := after != before; seen == fixed {
			t.Errorf("fixed=%v: a Service changed in place seen=%v", fixed, seen)
		}
	}
}

// uniqueObjects is the set of objects list holds.
func uniqueObjects[T any](list []*T) map[*T]bool {
	out := map[*T]bool{}
	for _, o := range list {
		out[o] = true
	}
	return out
}

// envObjects counts the objects envDigest reads in res.
func envObjects(res *Resources) int {
	n := 0
	v := reflect.ValueOf(res).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if routeInputs[f.Name] || !f.IsExported() {
			continue
		}
		switch fv := v.Field(i); {
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Implements(objectType):
			n += fv.Len()
		case fv.Type().Implements(objectType):
			n++
		}
	}
	return n
}

// TestMemoReusesTheEnvironmentsIndex: a translation whose environment did
// not change (only a route did) indexes it no more; one whose environment
// changed indexes it anew.
func TestMemoReusesTheEnvironmentsIndex(t *testing.T) {
	res := generate(50, 5, 3)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	m.Translate(res)
	first := m.envIndex
	if first == nil {
		t.Fatal("no index kept")
	}
	next := *res
	next.HTTPRoutes = slices.Clone(res.HTTPRoutes)
	changed := next.HTTPRoutes[7].DeepCopy()
	changed.Spec.Hostnames = append(changed.Spec.Hostnames, "more.example.com")
	v.stamp(changed)
	next.HTTPRoutes[7] = changed
	m.Translate(&next)
	if m.envIndex != first {
		t.Error("a route change indexed the environment again")
	}
	svc := next.Services[0].DeepCopy()
	v.stamp(svc)
	next.Services = append([]*corev1.Service{svc}, next.Services[1:]...)
	m.Translate(&next)
	if m.envIndex == first || m.envIndex == nil {
		t.Error("a Service change kept the environment's old index")
	}
}

// TestEmitPatchedEqualsTranslate drives a Memo through changes of a few
// routes at a time among many (paths and hostnames edited, routes added
// under new or shared hostnames, removed), as a cluster sees them: every
// translation must equal a fresh one, and the listeners' hosts must have
// been patched rather than emitted anew (emitPatched).
func TestEmitPatchedEqualsTranslate(t *testing.T) {
	rng := rand.New(rand.NewSource(43))
	res := generate(300, 5, 3)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	m.Translate(res)
	patched, carried := 0, 0
	for step := 1; step <= 60; step++ {
		next := *res
		next.HTTPRoutes = slices.Clone(res.HTTPRoutes)
		for range 1 + rng.Intn(3) {
			i := rng.Intn(len(next.HTTPRoutes))
			if rng.Intn(3) == 0 {
				// Mostly the copies: their hostnames are their own, and go
				// with them.
				for j := len(next.HTTPRoutes) - 1; j >= 0; j-- {
					if strings.Contains(next.HTTPRoutes[j].Name, "-copy") {
						i = j
						break
					}
				}
			}
			r := next.HTTPRoutes[i].DeepCopy()
			switch rng.Intn(5) {
			case 0: // a path edited
				r.Spec.Rules[0].Matches[0].Path.Value = ptr.To(fmt.Sprintf("/p%d", step))
			case 1: // a hostname more, shared with another route
				r.Spec.Hostnames = append(r.Spec.Hostnames, next.HTTPRoutes[rng.Intn(len(next.HTTPRoutes))].Spec.Hostnames...)
			case 2: // a copy under a new name and hostname
				r.Name += fmt.Sprintf("-copy%d", step)
				r.UID = ""
				r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("new%d.example.com", step))}
				v.stamp(r)
				next.HTTPRoutes = append(next.HTTPRoutes, r)
				continue
			case 3: // removed
				next.HTTPRoutes = slices.Delete(next.HTTPRoutes, i, i+1)
				continue
			case 4: // no hostname of its own any more: the listener's
				r.Spec.Hostnames = nil
			}
			v.stamp(r)
			next.HTTPRoutes[i] = r
		}
		res = &next
		got, want := m.Translate(res), Translate(res)
		if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
			t.Fatalf("step %d: memoized and fresh translations differ:\n%s", step, firstDifference(w, g))
		}
		patched += m.lastPatched
		carried += m.lastCarried
	}
	// Six listeners (three Gateways' HTTP and HTTPS) a translation: most
	// of them patched, translation after translation.
	if patched < 300 {
		t.Fatalf("%d of 360 listeners patched in 60 translations: emitPatched is not doing its job", patched)
	}
	// A change touches a route or three: the listeners it leaves alone
	// record the endpoint sets their last emission listed.
	if carried < 30 {
		t.Fatalf("%d of 360 listeners took their endpoint sets from their last emission", carried)
	}
	t.Logf("%d listeners patched, %d of them with the sets of their last emission", patched, carried)
}

// TestMemoFindsRoutesByObject: the Memo finds an unchanged route by its
// object and falls back to its name for another object of it (a copy at
// the same resourceVersion, or the object of an older translation
// coming back); every translation equals a fresh one, reuses every
// unchanged route, and keeps only the objects it last used.
func TestMemoFindsRoutesByObject(t *testing.T) {
	res := generate(50, 5, 3)
	v := &versioner{}
	v.stampAll(res)
	n := len(res.HTTPRoutes)
	edited := *res
	edited.HTTPRoutes = slices.Clone(res.HTTPRoutes)
	changed := edited.HTTPRoutes[7].DeepCopy()
	changed.Spec.Hostnames = append(changed.Spec.Hostnames, "more.example.com")
	v.stamp(changed)
	edited.HTTPRoutes[7] = changed
	copied := *res
	copied.HTTPRoutes = slices.Clone(res.HTTPRoutes)
	copied.HTTPRoutes[3] = res.HTTPRoutes[3].DeepCopy() // same version, another object
	removed := copied
	removed.HTTPRoutes = slices.Delete(slices.Clone(copied.HTTPRoutes), 5, 6)

	m := NewMemo()
	for step, tc := range []struct {
		in       *Resources
		compiled int
	}{{res, n}, {&edited, 1}, {res, 1}, {&copied, 0}, {&copied, 0}, {&removed, 0}, {&removed, 0}, {&copied, 1}} {
		got := m.Translate(tc.in)
		if g, w := mustJSON(t, got), mustJSON(t, Translate(tc.in)); !bytes.Equal(g, w) {
			t.Fatalf("step %d: memoized and fresh translations differ:\n%s", step, firstDifference(w, g))
		}
		if _, compiled := m.LastCounts(); compiled != tc.compiled {
			t.Errorf("step %d: %d routes compiled, want %d", step, compiled, tc.compiled)
		}
		// Entries of routes no longer there, or of objects replaced, are
		// forgotten.
		if want := len(tc.in.HTTPRoutes); len(m.byMeta) != want || len(m.routes) != want {
			t.Errorf("step %d: %d objects and %d routes kept, want %d", step, len(m.byMeta), len(m.routes), want)
		}
		for _, r := range tc.in.HTTPRoutes {
			if mr := m.byMeta[&r.ObjectMeta]; mr == nil || mr.meta != &r.ObjectMeta || mr.rv != r.ResourceVersion {
				t.Fatalf("step %d: route %s is not kept by its object", step, r.Name)
			}
		}
	}
}

// TestMemoSharesUnchangedGatewayStatuses: after a route leaves one
// Gateway, every other Gateway is reported with the very status lists of
// the last translation, and that one with new ones counting fewer
// attached routes (translateOneChange checks both against a fresh translation).
func TestMemoSharesUnchangedGatewayStatuses(t *testing.T) {
	var left gwv1.ObjectName
	before, after, _ := translateOneChange(t, generate(100, 5, 4), func(r *gwv1.HTTPRoute) {
		left = r.Spec.ParentRefs[0].Name
		r.Spec.ParentRefs = nil
	})
	attached := func(st GatewayStatus) (n int32) {
		for _, l := range st.Status.Listeners {
			n += l.AttachedRoutes
		}
		return n
	}
	old := map[types.NamespacedName]GatewayStatus{}
	for _, st := range before.Gateways {
		old[st.NamespacedName] = st
	}
	if len(after.Gateways) != 4 || len(old) != 4 {
		t.Fatalf("%d and %d Gateway statuses, want 4", len(before.Gateways), len(after.Gateways))
	}
	for _, st := range after.Gateways {
		prev := old[st.NamespacedName]
		same := st.GatewayState == prev.GatewayState
		switch {
		case st.Name == string(left) && same:
			t.Errorf("Gateway %s, which a route left, kept its old status", st.Name)
		case st.Name == string(left) && attached(st) >= attached(prev):
			t.Errorf("Gateway %s has %d routes attached, as many as before", st.Name, attached(st))
		case st.Name != string(left) && !same:
			t.Errorf("Gateway %s, untouched, got a new status", st.Name)
		}
	}
}

// TestMemoSharesTheGatewayList: a route change leaves the shared pool's
// Gateway list the very one of the last snapshot; a Gateway whose
// generation moved gets a new list, with its new generation and every
// Gateway's ports, and the last snapshot's list stays as it was.
func TestMemoSharesTheGatewayList(t *testing.T) {
	res := generate(40, 2, 3)
	before, after, _ := translateOneChange(t, res, func(r *gwv1.HTTPRoute) { r.Generation++ })
	b, a := before.Snapshots[0].Gateways, after.Snapshots[0].Gateways
	if len(a) != 3 || &a[0] != &b[0] {
		t.Fatalf("a route change made a new Gateway list (%d Gateways)", len(a))
	}

	m, v := memoOf(res)
	steps := memoSteps{m: m}
	first := steps.next(t, "first", res).Snapshots[0].Gateways
	kept := slices.Clone(first)
	moved := *res
	gw := res.Gateways[1].DeepCopy()
	gw.Generation++
	v.stamp(gw)
	moved.Gateways = slices.Clone(res.Gateways)
	moved.Gateways[1] = gw
	got := steps.next(t, "a Gateway's generation moved", &moved).Snapshots[0].Gateways
	if len(got) != 3 || &got[0] == &first[0] || got[1].Generation != gw.Generation || len(got[2].Ports) == 0 {
		t.Errorf("after a Gateway's generation moved: %+v (the last list: %v)", got, &got[0] == &first[0])
	}
	if !slices.EqualFunc(first, kept, sameGatewayRef) {
		t.Errorf("the last snapshot's Gateway list changed: %+v, was %+v", first, kept)
	}
}

// TestMemoKeepsTheInternalPorts: a route change keeps the last
// translation's internal port assignment (the same list); a Gateway
// added assigns them again.
func TestMemoKeepsTheInternalPorts(t *testing.T) {
	res := generate(20, 2, 3)
	before, after, _ := translateOneChange(t, res, func(r *gwv1.HTTPRoute) { r.Generation++ })
	if len(after.InternalPorts) == 0 || &after.InternalPorts[0] != &before.InternalPorts[0] {
		t.Fatalf("a route change assigned the internal ports again (%d of them)", len(after.InternalPorts))
	}
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	first := m.Translate(res)
	more := *res
	gw := res.Gateways[0].DeepCopy()
	gw.Name = "gw-new"
	v.stamp(gw)
	more.Gateways = append(slices.Clone(res.Gateways), gw)
	got := m.Translate(&more)
	if g, w := mustJSON(t, got), mustJSON(t, Translate(&more)); !bytes.Equal(g, w) {
		t.Fatalf("memoized and fresh translations differ:\n%s", firstDifference(w, g))
	}
	if len(got.InternalPorts) != len(first.InternalPorts)+2 {
		t.Fatalf("%d internal ports after a Gateway with two ports was added to %d", len(got.InternalPorts), len(first.InternalPorts))
	}
}

// TestMemoKeepsTheGateways: in an unchanged environment a Memo's
// translation starts from copies of the Gateways, ListenerSets and
// listeners the Memo kept, twice in a row (the second must not copy what
// the first changed), and equals a fresh translation every time, over
// every golden input; a Gateway changed translates them all again.
func TestMemoKeepsTheGateways(t *testing.T) {
	for in, res := range goldenResources(t) {
		if len(res.Gateways) == 0 {
			continue
		}
		v := &versioner{}
		v.stampAll(res)
		m := NewMemo()
		check := func(what string, next *Resources, kept bool) {
			t.Helper()
			got := m.Translate(next)
			if g, w := mustJSON(t, got), mustJSON(t, Translate(next)); !bytes.Equal(g, w) {
				t.Fatalf("%s, %s: memoized and fresh translations differ:\n%s", in, what, firstDifference(w, g))
			}
			if m.lastKeptGateways != kept {
				t.Errorf("%s, %s: started from the kept Gateways: %v, want %v", in, what, m.lastKeptGateways, kept)
			}
		}
		check("first", res, false)
		for step := range 2 {
			// A route re-versioned (none: nothing changed), which leaves
			// the environment as it was.
			next := *res
			if len(res.HTTPRoutes) > 0 {
				r := res.HTTPRoutes[0].DeepCopy()
				r.Generation++
				v.stamp(r)
				next.HTTPRoutes = append(slices.Clone(res.HTTPRoutes[1:]), r)
			}
			check(fmt.Sprintf("route change %d", step+1), &next, true)
			res = &next
		}
		next := *res
		gw := res.Gateways[0].DeepCopy()
		gw.Generation++
		v.stamp(gw)
		next.Gateways = append(slices.Clone(res.Gateways[1:]), gw)
		check("Gateway changed", &next, false)
		check("after the Gateway change", &next, true)
	}
}

// TestMemoSharesUnchangedListeners: after one route changes, every HTTP
// listener that does not serve it keeps the very virtual host list of the
// last translation (nothing copied), and the one that does gets a new one.
// (The Memo's second translation lends compiled routes the first made,
// so listeners are compared from the second on.)
func TestMemoSharesUnchangedListeners(t *testing.T) {
	res := generate(100, 5, 4)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	m.Translate(res)
	before := m.Translate(res)
	next := *res
	next.HTTPRoutes = slices.Clone(res.HTTPRoutes)
	changed := res.HTTPRoutes[7].DeepCopy()
	changed.Spec.Rules[1].Matches[0].Path.Value = ptr.To("/changed")
	v.stamp(changed)
	next.HTTPRoutes[7] = changed
	after := m.Translate(&next)
	if g, w := mustJSON(t, after), mustJSON(t, Translate(&next)); !bytes.Equal(g, w) {
		t.Fatalf("memoized and fresh translations differ:\n%s", firstDifference(w, g))
	}
	old := map[string]**snapshot.VirtualHost{}
	for _, l := range before.Snapshots[0].Listeners {
		if len(l.VirtualHosts) > 0 {
			old[snapshot.ListenerKey(&l)] = &l.VirtualHosts[0]
		}
	}
	host := string(changed.Spec.Hostnames[0])
	shared, fresh := 0, 0
	for _, l := range after.Snapshots[0].Listeners {
		if len(l.VirtualHosts) == 0 {
			continue
		}
		serves := slices.ContainsFunc(l.VirtualHosts, func(vh *snapshot.VirtualHost) bool { return vh.Hostname == host })
		same := old[snapshot.ListenerKey(&l)] == &l.VirtualHosts[0]
		switch {
		case serves && same:
			t.Fatalf("listener %s, which serves the changed route, kept its old host list", l.Name)
		case serves:
			fresh++
		case !same:
			t.Fatalf("listener %s, untouched, got a new host list", l.Name)
		default:
			shared++
		}
	}
	if fresh == 0 || shared == 0 {
		t.Fatalf("%d listeners shared their host list and %d did not; want both > 0", shared, fresh)
	}
}

// TestMemoReusesTheRouteListsBeforeLast: a listener's route list is made
// in the array of the translation before the last (the last one's is its
// emission, which the next compares with), not anew.
func TestMemoReusesTheRouteListsBeforeLast(t *testing.T) {
	res := generate(200, 5, 1)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	var arrays []*attachment
	for step := range 4 {
		next := *res
		next.HTTPRoutes = slices.Clone(res.HTTPRoutes)
		changed := res.HTTPRoutes[step].DeepCopy()
		changed.Generation++
		v.stamp(changed)
		next.HTTPRoutes[step] = changed
		m.Translate(&next)
		res = &next
		if len(m.routeLists) == 0 || len(m.routeLists[0]) == 0 {
			t.Fatalf("step %d: no route list kept for the first listener", step)
		}
		arrays = append(arrays, &m.routeLists[0][0])
	}
	if arrays[1] == arrays[0] || arrays[2] != arrays[0] || arrays[3] != arrays[1] {
		t.Fatalf("route list arrays %v: want two, alternating", arrays)
	}
}

// TestMemoRepeatedRouteNames: a route name listed twice (two objects of
// one namespace and name; the first in input order wins) among kept
// routes, added anew or as a second object of a kept route, translates
// through a Memo as it does fresh, at every step.
func TestMemoRepeatedRouteNames(t *testing.T) {
	res := generate(300, 5, 2)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	check := func(step string, r *Resources) {
		t.Helper()
		if g, w := mustJSON(t, m.Translate(r)), mustJSON(t, Translate(r)); !bytes.Equal(g, w) {
			t.Fatalf("%s: memoized and fresh translations differ:\n%s", step, firstDifference(w, g))
		}
	}
	check("first", res)
	check("again", res)
	for step, at := range []int{7, 150, 299} {
		next := *res
		twin := res.HTTPRoutes[at].DeepCopy()
		twin.UID = types.UID(fmt.Sprintf("twin-%d", step))
		twin.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("twin-%d.example.com", step))}
		v.stamp(twin)
		// The twin first in input order, then after the original.
		next.HTTPRoutes = append([]*gwv1.HTTPRoute{twin}, res.HTTPRoutes...)
		check(fmt.Sprintf("twin %d first", step), &next)
		check(fmt.Sprintf("twin %d first, again", step), &next)
		next.HTTPRoutes = append(slices.Clone(res.HTTPRoutes), twin)
		check(fmt.Sprintf("twin %d last", step), &next)
		// A new route listed twice.
		added := res.HTTPRoutes[at].DeepCopy()
		added.Name, added.UID = fmt.Sprintf("zz-new-%d", step), types.UID(fmt.Sprintf("new-%d", step))
		v.stamp(added)
		again := added.DeepCopy()
		again.UID = types.UID(fmt.Sprintf("new-again-%d", step))
		v.stamp(again)
		next.HTTPRoutes = append(slices.Clone(res.HTTPRoutes), added, again)
		check(fmt.Sprintf("new route %d twice", step), &next)
		check(fmt.Sprintf("new route %d twice, again", step), &next)
	}
}

// TestMemoSharesRouteConditions: with a Memo, route parents whose
// conditions are the same share one list (most routes have the same two),
// and so do routes with one parent whose statuses are the same, also
// across translations; parents whose conditions differ do not share;
// without a Memo each has its own. Statuses are never modified, so the
// Result is what a translation without a Memo makes (TestMemoEqualsTranslate).
func TestMemoSharesRouteConditions(t *testing.T) {
	res := generate(40, 2, 2)
	// lists is the condition lists of a Result's route parents, by what
	// they say.
	lists := func(r *Result) (map[string]map[*metav1.Condition]bool, int) {
		out, parents := map[string]map[*metav1.Condition]bool{}, 0
		for _, rs := range r.HTTPRoutes {
			for i := range rs.Parents {
				c := rs.Parents[i].Conditions
				k := fmt.Sprint(c)
				if out[k] == nil {
					out[k] = map[*metav1.Condition]bool{}
				}
				out[k][&c[0]] = true
				parents++
			}
		}
		return out, parents
	}
	m := NewMemo()
	shared, parents := lists(m.Translate(res))
	if parents < 40 || len(shared) < 2 {
		t.Fatalf("%d parents with %d kinds of conditions: the test needs more", parents, len(shared))
	}
	for k, ls := range shared {
		if len(ls) != 1 {
			t.Errorf("%d lists of the conditions %s", len(ls), k)
		}
	}
	// So do routes whose one parent's status is the same.
	statuses := map[string]map[*gwv1.RouteParentStatus]bool{}
	for _, rs := range m.Translate(res).HTTPRoutes {
		if len(rs.Parents) == 1 {
			b, err := json.Marshal(rs.Parents)
			if err != nil {
				t.Fatal(err)
			}
			k := string(b)
			if statuses[k] == nil {
				statuses[k] = map[*gwv1.RouteParentStatus]bool{}
			}
			statuses[k][&rs.Parents[0]] = true
		}
	}
	if len(statuses) == 0 || len(statuses) >= 40 {
		t.Errorf("%d kinds of one-parent statuses: the test needs routes that have the same", len(statuses))
	}
	for k, ls := range statuses {
		if len(ls) != 1 {
			t.Errorf("%d lists of the parent status %s", len(ls), k)
		}
	}
	// A route changed: the next translation's parents share the lists of
	// the last.
	res.HTTPRoutes[0] = res.HTTPRoutes[0].DeepCopy()
	res.HTTPRoutes[0].Spec.Hostnames = append(res.HTTPRoutes[0].Spec.Hostnames, "another.example.com")
	again, _ := lists(m.Translate(res))
	for k, ls := range again {
		for l := range ls {
			if !shared[k][l] {
				t.Errorf("a new list of the conditions %s", k)
			}
		}
	}
	own, parents := lists(Translate(res))
	n := 0
	for _, ls := range own {
		n += len(ls)
	}
	if n != parents {
		t.Errorf("without a Memo, %d condition lists for %d parents", n, parents)
	}
}

// TestMemoReusesItsScratchMaps: a Memo's translations work in the same
// scratch maps and lists, emptied after each (scratch), rather than in
// new ones; TestMemoEqualsTranslate holds them to translating as a fresh
// one does.
func TestMemoReusesItsScratchMaps(t *testing.T) {
	res := generate(50, 2, 1)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	m.Translate(res)
	first := m.spare
	if first == nil {
		t.Fatal("the Memo kept no scratch maps")
	}
	mapOf := func(s *scratch) []uintptr {
		if len(s.sets) == 0 || len(s.builders) == 0 || cap(s.states) == 0 {
			t.Fatal("the scratch holds no endpoint sets, listener builders or listener states")
		}
		return []uintptr{reflect.ValueOf(s.endpointSets).Pointer(), reflect.ValueOf(s.setNames).Pointer(),
			reflect.ValueOf(s.slices).Pointer(), reflect.ValueOf(s.poolSets).Pointer(), reflect.ValueOf(s.poolListeners).Pointer(),
			reflect.ValueOf(s.sets[0]).Pointer(), reflect.ValueOf(s.builders[0]).Pointer(), reflect.ValueOf(s.states).Pointer()}
	}
	before := mapOf(first)
	out := m.Translate(res)
	if len(out.Snapshots) == 0 || len(out.Snapshots[0].EndpointSets) == 0 {
		t.Fatal("the translation made no endpoint sets")
	}
	if !slices.Equal(mapOf(m.spare), before) {
		t.Error("the second translation worked in new scratch maps")
	}
	if s := m.spare; len(s.endpointSets)+len(s.poolSets)+len(s.poolListeners)+s.used+s.buildersUsed > 0 ||
		s.sets[0][0].Name != "" || s.builders[0][0].l.Name != "" || s.states[0].routes != nil {
		t.Error("the scratch was kept with what a translation put in it")
	}
	// Set names are kept: each is its key's alone.
	if len(m.spare.setNames) == 0 {
		t.Error("the set names were not kept")
	}
	for k, n := range m.spare.setNames {
		if n != k.setName() {
			t.Errorf("set name %q kept for %+v", n, k)
		}
	}
}

// TestMemoKeepsTheSliceIndex: the index of EndpointSlices by Service is
// kept for a translation of the very same list, and made again for
// another list.
func TestMemoKeepsTheSliceIndex(t *testing.T) {
	res := generate(50, 2, 1)
	m, v := memoOf(res)
	sentinel := nn{Namespace: "not", Name: "indexed"}
	m.spare.slices[sentinel] = nil // what a new index would not have
	m.Translate(res)
	if _, ok := m.spare.slices[sentinel]; !ok {
		t.Fatal("the index of the same EndpointSlices was made again")
	}
	next := *res
	next.EndpointSlices = v.churned(rand.New(rand.NewSource(1)), res.EndpointSlices, 1)
	got := m.Translate(&next)
	if _, ok := m.spare.slices[sentinel]; ok {
		t.Fatal("the index of other EndpointSlices was kept")
	}
	want := map[nn][]*discoveryv1.EndpointSlice{}
	(&index{}).indexSlices(next.EndpointSlices, want)
	if !reflect.DeepEqual(m.spare.slices, want) {
		t.Error("the index kept is not the index of the list translated")
	}
	if g, w := mustJSON(t, got), mustJSON(t, Translate(&next)); !bytes.Equal(g, w) {
		t.Fatalf("memoized and fresh translations differ:\n%s", firstDifference(w, g))
	}
}

// TestScratchForgetsSetNamesOfServicesGone: the set names a scratch keeps
// are cleared once they are many more than a translation's sets.
func TestScratchForgetsSetNamesOfServicesGone(t *testing.T) {
	s := newScratch(0, 0)
	for i := range 100 {
		k := setKey{ns: "ns", name: fmt.Sprintf("svc-%d", i), port: 80}
		s.setNames[k] = k.setName()
	}
	s.endpointSets["ns/svc-0:80"] = &snapshot.EndpointSet{}
	s.empty()
	if len(s.setNames) != 0 {
		t.Errorf("%d set names kept with one set made", len(s.setNames))
	}
	k := setKey{ns: "ns", name: "svc", port: 53, udp: true}
	s.setNames[k] = k.setName()
	s.empty()
	if s.setNames[k] != "ns/svc:53/udp" {
		t.Errorf("set names after a translation of few sets: %v", s.setNames)
	}
}

// sourcesBySet is r's endpoint sources by set name (nil: none).
func sourcesBySet(r *Result) map[string]endpointSource {
	if r.endpointSources == nil {
		return nil
	}
	return r.endpointSources.bySet
}

// TestMemoSharesUnchangedEndpointSets: a route change that changes no
// endpoint set leaves the scope's endpoint set list and the Result's
// endpoint sources the very ones of the last translation; a changed
// EndpointSlice gets a new list.
func TestMemoSharesUnchangedEndpointSets(t *testing.T) {
	before, after, _ := translateOneChange(t, generate(400, 5, 1), func(r *gwv1.HTTPRoute) {
		r.Spec.Rules[1].Matches[0].Path.Value = ptr.To("/changed")
	})
	b, a := before.Snapshots[0].EndpointSets, after.Snapshots[0].EndpointSets
	if len(a) == 0 || !lists.Same(a, b) {
		t.Errorf("a route change gave a new endpoint set list (%d sets)", len(a))
	}
	if len(sourcesBySet(after)) == 0 || after.endpointSources != before.endpointSources {
		t.Errorf("a route change gave new endpoint sources (%d)", len(sourcesBySet(after)))
	}

	res := generate(400, 5, 1)
	v := &versioner{}
	v.stampAll(res)
	m := NewMemo()
	first := m.Translate(res)
	next := *res
	next.EndpointSlices = append(res.EndpointSlices[:0:0], res.EndpointSlices...)
	sl := next.EndpointSlices[3].DeepCopy()
	sl.Endpoints = sl.Endpoints[:1]
	v.stamp(sl)
	next.EndpointSlices[3] = sl
	second := m.Translate(&next)
	if g, w := mustJSON(t, second), mustJSON(t, Translate(&next)); !bytes.Equal(g, w) {
		t.Fatalf("memoized and fresh translations differ:\n%s", firstDifference(w, g))
	}
	if lists.Same(first.Snapshots[0].EndpointSets, second.Snapshots[0].EndpointSets) {
		t.Error("a changed EndpointSlice left the endpoint set list as it was")
	}
}

// TestMemoSharesUnchangedRouteStates: after one route changes, every
// other route's status is the very RouteState of the last Result, and
// the changed route's is a new one.
func TestMemoSharesUnchangedRouteStates(t *testing.T) {
	before, after, changed := translateOneChange(t, generate(400, 5, 1), func(r *gwv1.HTTPRoute) {
		r.Generation++
		r.Spec.Rules[1].Matches[0].Path.Value = ptr.To("/changed")
	})
	old := map[nn]*RouteState{}
	for _, rs := range before.HTTPRoutes {
		old[rs.NamespacedName] = rs.RouteState
	}
	shared := 0
	for _, rs := range after.HTTPRoutes {
		switch same := old[rs.NamespacedName] == rs.RouteState; {
		case rs.Name == changed.Name && rs.Namespace == changed.Namespace:
			if same {
				t.Error("the changed route kept its RouteState")
			}
		case !same:
			t.Fatalf("route %s, unchanged, got a new RouteState", rs.NamespacedName)
		default:
			shared++
		}
	}
	if shared != len(after.HTTPRoutes)-1 {
		t.Fatalf("%d of %d route states shared", shared, len(after.HTTPRoutes))
	}
}

// TestHostOrderFromTheListenerBuilt: a listener the last translation
// carried or patched has its built hosts as its order; the names a build
// listed come first.
func TestHostOrderFromTheListenerBuilt(t *testing.T) {
	built := &builtListener{hosts: []*snapshot.VirtualHost{{Hostname: "a.example.com"}, {Hostname: "b.example.com"}}}
	if got := hostOrder(built); !slices.Equal(got, []string{"a.example.com", "b.example.com"}) {
		t.Errorf("carried listener's order %v", got)
	}
	built.names = []string{"c.example.com"}
	if got := hostOrder(built); !slices.Equal(got, []string{"c.example.com"}) {
		t.Errorf("built listener's order %v", got)
	}
	if hostOrder(nil) != nil {
		t.Error("an order for a listener never built")
	}
}
