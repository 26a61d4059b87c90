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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Memo carries the compiled HTTPRoutes and GRPCRoutes of one translation
// into the next, so that a change to one route compiles that route alone.
//
// Compiling a route reads the route and, through the translator, every
// input but routes and EndpointSlices (Services, ReferenceGrants, policies,
// ...; its endpoint sets are rebuilt from the slices each time). A route's
// compilation is reused when the route has the same UID and
// resourceVersion and those other inputs are the same objects at the same
// resourceVersions (for kinds whose status Translate never reads: the
// same generation and metadata) as in the translation that compiled it;
// anything else compiles again. Inputs without a resourceVersion (test fixtures) are
// never trusted. Routes whose filters name policies (ExtensionRef) are
// always compiled: their compilation points at the policies of its own
// translation.
//
// Memo.Translate(res) equals Translate(res) whatever the Memo saw before
// (TestMemoEqualsTranslate). A Memo serves one caller at a time.
type Memo struct {
	mu  sync.Mutex
	env [sha256.Size]byte
	// routes and hosts hold what the last translation compiled and
	// emitted. A translation updates them in place and marks what it used
	// with its number (gen), then drops the rest: at 10,000 routes,
	// building both maps anew was a tenth of a translation.
	routes map[memoKey]*memoRoute
	built  map[listenerID]*listenerSlot
	// byMeta are the entries of routes by the object the last
	// translation that used them had (memoRoute.meta): an informer's
	// store hands over an unchanged route as the same object, and a
	// pointer is quicker to look up than its kind, namespace and name
	// (a tenth of a translation at 10,000 routes).
	byMeta map[*metav1.ObjectMeta]*memoRoute
	// ports is the last translation's internal port assignment.
	ports *memoPorts
	// endpoints are the endpoint lists of the last translation's sets.
	endpoints map[string]*memoEndpoints
	// setOrder is each scope's endpoint sets in the last translation,
	// in order.
	setOrder map[snapshot.Scope]setOrder
	// setLists is each scope's endpoint set list in the last translation,
	// sources the sources of its endpoint sets (keepSources).
	setLists map[snapshot.Scope]setList
	sources  *endpointSources
	// gatewayRefs is each scope's Gateway list in the last translation,
	// listenerOrder the keys of its listeners in order.
	gatewayRefs   map[snapshot.Scope][]snapshot.GatewayRef
	listenerOrder map[snapshot.Scope][]string
	// spare is the last translation's scratch maps, emptied, for the next.
	spare *scratch
	// sizes are the last translation's list lengths, for the next to
	// allocate at once rather than grow: the routes of each listener by
	// ord and the sources of the endpoint sets.
	sizes memoSizes
	gen   uint64
	// lastHits and lastMisses count the compilations the last Translate
	// reused and made, lastPatched the listeners whose hosts it patched.
	lastHits, lastMisses, lastPatched, lastCarried int
	// lastRoutesCarried counts the routes the last Translate's walks
	// took from the walks before without a visit (carryWalk).
	lastRoutesCarried int
	// ids are the environment's objects' ids (envDigest).
	ids envIDs
	// envIndex is the last translation's index of its environment
	// (buildEnvIndex), for the next one of the same environment; nil
	// when there is none to trust.
	envIndex *index
	// walks are the route walks' scratch lists by memo kind
	// (*routeWalk[R]).
	walks map[string]any
	// conds are route parents' condition lists by their conditions
	// (routeConds), shared by every status that has them: most routes
	// have the same two, and each kept its own (6 MB at 10,000 routes).
	conds map[[2]metav1.Condition][]metav1.Condition
	// parents are the same for the status of a route with one parent
	// (routeParents).
	parents map[parentKey][]gwv1.RouteParentStatus
	// routeLists are the listeners' route lists (listenerState.routes)
	// of the last translation by ord, spareRoutes those of the one
	// before, whose arrays the next fills again: the last translation's
	// are its listeners' emissions (emitPatched compares with them), and
	// at 10,000 routes on a listener a new list was a third of a megabyte
	// a change.
	routeLists, spareRoutes [][]attachment
	// gatewaysKept is what processGateways made in the environment of
	// the last translation (keptGateways); nil when there is none.
	gatewaysKept *keptGateways
	// lastKeptGateways says the last Translate started from it.
	lastKeptGateways bool
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{} }

// NewStoreMemo returns an empty Memo for Resources whose objects are an
// informer store's: an object is never changed in place (a change is a
// new object), and a list is never modified once handed over. An object
// the last translation had is then taken to be at the resourceVersion it
// had, and a list it had as unchanged, without a look at the objects:
// with 10,000 Services and EndpointSlices, reading each one's
// resourceVersion at every route change was a fifth of the translation.
// NewMemo's Memo reads them, and sees an object changed in place.
func NewStoreMemo() *Memo { return &Memo{ids: envIDs{fixed: true}} }

type memoKey struct {
	kind, namespace, name string
}

// memoRoute is one compiled route and what it was compiled from.
//
// The fields a walk of unchanged routes reads for every route come first,
// so that they share as few cache lines as can be; those it reads only
// for a route whose object changed (uid, rv) come last.
type memoRoute struct {
	// meta is the route's object in that translation (Memo.byMeta).
	meta *metav1.ObjectMeta
	gen  uint64 // the last translation that used it
	// rank is the route's position in that translation's order of its
	// kind (sortNamed).
	rank int
	// lent is the route's compilation with the object it was compiled
	// from or last lent to (lentTo, kept here so that lend need not read
	// lent), for the next translation to take as is when its route is
	// the same object (an informer's store keeps an unchanged object).
	lent   *compiledRoute
	lentTo *metav1.ObjectMeta
	// name and generation are the route's (the same for every object of
	// its resourceVersion).
	name       nn
	generation int64
	// sets are the endpointSet calls the compilation made, in order, to
	// be made again (they also build the sets' endpoints and record
	// their sources in the Result).
	sets []setCall
	// attached says parents and atts hold the route's attachment, made
	// in an environment that numbers listeners as this one does: its
	// status for our parents, and what it attached to which listener.
	attached bool
	atts     []memoAtt
	parents  []gwv1.RouteParentStatus
	// state is the route's status in the last Result (routeState).
	state *RouteState
	// att1 holds atts when the route matched one listener, as most do:
	// a walk of 10,000 unchanged routes then finds each one's attachment
	// in its entry rather than in an allocation of its own (a cache miss
	// each, a tenth of the walk).
	att1 [1]memoAtt

	uid types.UID
	rv  string
	// kind is the route's memo kind.
	kind string
}

// memoAtt is one listener a route matched (attachToListeners): the
// listener by ord, the hostnames it serves there, and whether it was
// added to the listener's routes (it is counted either way).
type memoAtt struct {
	ord    int
	hosts  []string
	bits   uint64 // hostBits(hosts)
	routed bool
}

// setCall is one call of endpointSet: the Service, its port by index,
// and the protocol asked for; name is the set it named, and ends the
// Memo's endpoints of that set when a replay last found them (nil: not
// yet), which say without a lookup whether this translation made the set.
type setCall struct {
	service types.NamespacedName
	port    int
	proto   snapshot.AppProtocol
	name    string
	ends    *memoEndpoints
}

// listenerID names a listener of a snapshot.
type listenerID struct {
	scope    snapshot.Scope
	listener string
}

// builtListener is what a translation built for one HTTP listener of a
// snapshot: its virtual hosts (the snapshot's list, by hostname) and, by
// index, the routes each was built from, in the order they were emitted.
// Compiled routes are never modified, so a virtual host emitted from the
// same ones in the same order has the same route list: the next
// translation shares it, and discovery need not encode it again
// (snapshot.Encoder). emit, when set, is how a Gateway's listeners
// emitted the hosts (emitPatched).
type builtListener struct {
	hosts []*snapshot.VirtualHost
	// names are the hostnames of hosts when a build listed them
	// (buildHosts; nil when patched): the next translation's host order.
	names []string
	// from is what the hosts' route lists were made from (nil: not
	// recorded, without a Memo); the listener's translations share it.
	from *hostSources
	emit *emission
	gen  uint64 // the last translation that built it
}

// memoEndpoints is the endpoint list of one endpoint set, and the
// Service port and EndpointSlices (each the same object at the same
// resourceVersion) it was listed from.
//
// gen is the last translation that made the set (endpointSet lists its
// endpoints here only when it makes it), and usedIn the id of the last
// scope builder that recorded the set as used (useCompiled): at 10,000
// unchanged routes, looking their sets up by name, to replay them and to
// record them in their scope, was a third of a translation.
type memoEndpoints struct {
	src    endpointSource
	slices []*discoveryv1.EndpointSlice
	rvs    []string
	eps    []snapshot.Endpoint
	gen    uint64
	usedIn uint64
	// madeGen is the last translation that made the set (endpointSet or
	// remakeSet), asked for protocol madeProto, and madeApp the protocol
	// it got (remakeSet).
	madeGen            uint64
	madeProto, madeApp snapshot.AppProtocol
	// remade is the set remakeSet made in translation remadeIn, which
	// translator.set finds here, by name, rather than in the
	// translation's map; replaced says another entry took this one's name
	// (remakeSet then makes nothing from it).
	remade   *snapshot.EndpointSet
	remadeIn uint64
	replaced bool
	// listed is the set a scope's set list held in translation listedIn
	// for a set remade from this entry, as remade (its protocol madeApp):
	// the next translation remakes the set as that very one
	// (remakeSet), which the lists then find the same by its pointer.
	listed   *snapshot.EndpointSet
	listedIn uint64
}

// noteListed records that a scope's set list holds es for the set
// remade from e (nil: none) in this translation, when es is as remade:
// markH2C did not change its protocol.
func (p *memoPass) noteListed(e *memoEndpoints, es *snapshot.EndpointSet) {
	if e != nil && es.AppProtocol == e.madeApp {
		e.listed, e.listedIn = es, p.gen
	}
}

// madeNow reports whether e (nil: unknown) is of a set this translation
// made.
func (p *memoPass) madeNow(e *memoEndpoints) bool {
	return e != nil && e.gen == p.gen
}

// memoSizes are list lengths of one translation (Memo.sizes).
type memoSizes struct {
	listenerRoutes []int
	sources        int
	// sharedListeners is how many listeners the shared pool's scope had.
	sharedListeners int
}

// memoPass is the Memo's state during one translation.
type memoPass struct {
	gen uint64
	// sizes are the last translation's on entry, this one's on exit.
	sizes memoSizes
	// routes and byMeta are the Memo's, emptied first when the
	// environment changed.
	routes map[memoKey]*memoRoute
	byMeta map[*metav1.ObjectMeta]*memoRoute
	// ports is, on entry, the Memo's internal port assignment (nil:
	// none) and, on exit, this translation's.
	ports *memoPorts
	// built are the Memo's; nil when the translation's inputs cannot be
	// trusted (an object without a resourceVersion).
	built map[listenerID]*listenerSlot
	// endpoints are the Memo's.
	endpoints map[string]*memoEndpoints
	// rec collects the endpointSet calls of the compilation in progress.
	rec *[]setCall
	// cur is the entry the compilation just made or reused was kept as
	// (nil: not kept); atts collects the attachment in progress, and
	// attsOK stays true while every listener it touches has an ord.
	cur *memoRoute
	// stated is the entry of the route reattach or attachRoute last
	// handled, for routeState (nil: none).
	stated *memoRoute
	atts   *[]memoAtt
	attsOK bool
	// current counts the route entries this pass used or made: when it
	// is every entry, none is left to sweep.
	current int
	// hits and misses count compilations reused and made (LastCounts);
	// patched counts the listeners emitPatched emitted, carried those
	// of them whose endpoint sets it took from the last emission.
	hits, misses, patched, carried int
	// ranked is the position of the route in progress in its kind's
	// order, recorded in the entries it reuses or makes.
	ranked int
	// last* are the Memo's orders; next* this translation's.
	lastSetOrder, nextSetOrder   map[snapshot.Scope]setOrder
	lastSetLists, nextSetLists   map[snapshot.Scope]setList
	lastGateways, nextGateways   map[snapshot.Scope][]snapshot.GatewayRef
	lastListeners, nextListeners map[snapshot.Scope][]string
	lastSources, nextSources     *endpointSources
	// envIndex is, on entry, the Memo's index of this translation's
	// environment (nil: none) and, on exit, this translation's.
	envIndex *index
	// sameEnv says the environment is the last translation's (envDigest):
	// what its listeners emitted may be patched (emitPatched).
	sameEnv bool
	// walks, conds and parents are the Memo's.
	walks   map[string]any
	conds   map[[2]metav1.Condition][]metav1.Condition
	parents map[parentKey][]gwv1.RouteParentStatus
	// spareRoutes are, on entry, the Memo's, and, on exit, this
	// translation's route lists by ord (in the same storage).
	spareRoutes [][]attachment
	// keptGateways is, on entry, what the Memo kept of processGateways
	// in this environment (nil: none) and, on exit, this translation's;
	// keptGatewaysUsed says processGateways started from it.
	keptGateways     *keptGateways
	keptGatewaysUsed bool
	// scratch is, on entry, the Memo's spare maps (nil: none) and, on
	// exit, this translation's (scratchFor).
	scratch *scratch
	// lastRoutes are the last translation's route lists by ord (nil:
	// none to trust), which a carried walk takes its routes' from.
	lastRoutes [][]attachment
	// walked are the memo kinds whose walk started from the last one's
	// (carryWalk): their entries this pass did not visit are still in
	// use. routesCarried counts the routes such walks did not visit.
	walked        []string
	routesCarried int
	// endpointsStamped counts the endpoint entries this pass stamped as
	// its own (stamp): as many as the Memo holds, none is left to sweep.
	endpointsStamped int
	// slicesKept says the EndpointSlices are the list the last
	// translation indexed (scratch.slicesFor).
	slicesKept bool
}

// walkCarried reports whether the walk of memo kind kind started from
// the last one's, its entries in use whatever their gen.
func (p *memoPass) walkCarried(kind string) bool {
	return slices.Contains(p.walked, kind)
}

// walkOf is the scratch lists of the route walk of memo kind kind, kept
// in the Memo (new ones without a Memo or a memo kind).
func walkOf[R any](p *memoPass, kind string) *routeWalk[R] {
	if p == nil || kind == "" {
		return &routeWalk[R]{}
	}
	w, ok := p.walks[kind].(*routeWalk[R])
	if !ok {
		w = &routeWalk[R]{}
		p.walks[kind] = w
	}
	w.ranked = p.gen - 1 // the Memo keeps the entries of the last translation only
	return w
}

// index is the translation's index of res: the Memo's index of the same
// environment with res's EndpointSlices, when it has one, else built;
// the EndpointSlices are sc's index of them, made unless sc has it.
func (p *memoPass) index(res *Resources, sc *scratch) *index {
	if p == nil {
		return buildIndex(res, sc.slices)
	}
	if p.envIndex == nil {
		p.envIndex = buildEnvIndex(res)
	}
	slices, indexed := sc.slicesFor(res.EndpointSlices)
	p.slicesKept = indexed
	if indexed {
		out := *p.envIndex
		out.slices = slices
		return &out
	}
	return p.envIndex.withSlices(res, slices)
}

// Translate is Translate(res), reusing the compiled routes the Memo holds
// where their inputs did not change, and keeping this translation's.
func (m *Memo) Translate(res *Resources) *Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	if res == nil {
		res = &Resources{}
	}
	env, ok := m.ids.digest(res)
	if m.routes == nil {
		m.routes, m.built, m.endpoints = map[memoKey]*memoRoute{}, map[listenerID]*listenerSlot{}, map[string]*memoEndpoints{}
		m.byMeta = map[*metav1.ObjectMeta]*memoRoute{}
		m.walks = map[string]any{}
		m.conds = map[[2]metav1.Condition][]metav1.Condition{}
		m.parents = map[parentKey][]gwv1.RouteParentStatus{}
	}
	if len(m.conds) >= maxSharedConds {
		clear(m.conds) // generations and messages come and go
	}
	if len(m.parents) >= maxSharedConds {
		clear(m.parents)
	}
	sameEnv := ok && env == m.env
	if !sameEnv {
		clear(m.routes)
		clear(m.byMeta)
		m.envIndex = nil
		m.gatewaysKept = nil
	}
	// Until this translation ends its entries are half updated: a pass
	// that never ends (a panic someone recovers) leaves an environment no
	// translation matches, so the next one starts empty.
	envIndex, gatewaysKept := m.envIndex, m.gatewaysKept
	m.env, m.envIndex, m.gatewaysKept = [sha256.Size]byte{}, nil, nil
	m.gen++
	ports := m.ports
	m.ports = nil
	if !sameEnv {
		ports = nil
	}
	spare := m.spare
	m.spare = nil // a pass that never ends keeps no scratch in two places
	pass := &memoPass{gen: m.gen, routes: m.routes, byMeta: m.byMeta, ports: ports, endpoints: m.endpoints, sizes: m.sizes, envIndex: envIndex, walks: m.walks, conds: m.conds, parents: m.parents,
		lastSetOrder: m.setOrder, nextSetOrder: make(map[snapshot.Scope]setOrder, len(m.setOrder)), scratch: spare,
		lastSetLists: m.setLists, nextSetLists: make(map[snapshot.Scope]setList, len(m.setLists)), lastSources: m.sources,
		lastGateways: m.gatewayRefs, nextGateways: make(map[snapshot.Scope][]snapshot.GatewayRef, len(m.gatewayRefs)),
		lastListeners: m.listenerOrder, nextListeners: make(map[snapshot.Scope][]string, len(m.listenerOrder))}
	if ok {
		pass.built, pass.sameEnv = m.built, sameEnv
		pass.keptGateways = gatewaysKept
		pass.spareRoutes = m.spareRoutes
		pass.lastRoutes = m.routeLists
	}
	out := translate(res, pass)
	if ok {
		m.env, m.envIndex, m.gatewaysKept = env, pass.envIndex, pass.keptGateways
		m.spareRoutes, m.routeLists = m.routeLists, pass.spareRoutes
		// Every route entry this pass used, and one object key for each:
		// nothing to sweep (a walk of 10,000 entries scattered over the
		// heap).
		if pass.current != len(m.routes) || len(m.byMeta) != len(m.routes) {
			stale := func(mr *memoRoute) bool { return mr.gen != m.gen && !pass.walkCarried(mr.kind) }
			maps.DeleteFunc(m.routes, func(_ memoKey, mr *memoRoute) bool { return stale(mr) })
			maps.DeleteFunc(m.byMeta, func(meta *metav1.ObjectMeta, mr *memoRoute) bool { return stale(mr) || mr.meta != meta })
		}
		maps.DeleteFunc(m.built, func(_ listenerID, s *listenerSlot) bool { return s.built == nil || s.built.gen != m.gen })
		m.ports = pass.ports
	} else {
		clear(m.routes)
		clear(m.byMeta)
		clear(m.built)
		m.routeLists, m.spareRoutes = nil, nil
	}
	// Every entry stamped: none to sweep (a walk of 10,000 entries
	// scattered over the heap at every change). An entry stamped that the
	// map no longer holds (replaced in this pass) may leave one that is
	// not stamped in the map until a later sweep: an entry not stamped is
	// never taken for this translation's (madeNow, remakeSet).
	if pass.endpointsStamped != len(m.endpoints) {
		maps.DeleteFunc(m.endpoints, func(_ string, e *memoEndpoints) bool { return e.gen != m.gen })
	}
	m.lastHits, m.lastMisses, m.lastPatched, m.lastCarried = pass.hits, pass.misses, pass.patched, pass.carried
	m.lastRoutesCarried = pass.routesCarried
	m.lastKeptGateways = pass.keptGatewaysUsed
	m.sizes = pass.sizes
	m.setOrder, m.setLists, m.sources = pass.nextSetOrder, pass.nextSetLists, pass.nextSources
	m.gatewayRefs, m.listenerOrder = pass.nextGateways, pass.nextListeners
	pass.scratch.empty()
	m.spare = pass.scratch
	return out
}

// LastCounts returns how many route compilations the last Translate
// reused and how many it made.
func (m *Memo) LastCounts() (reused, compiled int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastHits, m.lastMisses
}

// compile is compile(), or the memoized compilation of the same route.
func (p *memoPass) compile(t *translator, kind string, meta *metav1.ObjectMeta, compile func() *compiledRoute) *compiledRoute {
	k := memoKey{kind, meta.Namespace, meta.Name}
	p.cur = nil
	if mr := p.unchanged(t, p.routes[k], meta); mr != nil {
		p.cur = mr
		return mr.lend(meta)
	}
	p.misses++
	var rec []setCall
	p.rec = &rec
	cr := compile()
	p.rec = nil
	if meta.ResourceVersion != "" && len(cr.ext) == 0 {
		p.cur = &memoRoute{uid: meta.UID, rv: meta.ResourceVersion, name: key(meta), generation: meta.Generation, kind: kind,
			gen: p.gen, meta: meta, rank: p.ranked, lent: cr, lentTo: meta, sets: rec}
		if old := p.routes[k]; old != nil {
			if old.gen == p.gen {
				p.current-- // replaced after this pass used it
			}
			p.forgetObject(old)
		}
		p.current++
		p.routes[k] = p.cur
		p.byMeta[meta] = p.cur
	}
	return cr
}

// unchanged is mr, the entry of a route with the same identity and
// resourceVersion as meta's, its endpointSet calls made again, counted
// as a hit and kept for the next translation; nil when there is none.
func (p *memoPass) unchanged(t *translator, mr *memoRoute, meta *metav1.ObjectMeta) *memoRoute {
	if mr == nil {
		return nil
	}
	// The very object the entry was made from, or last matched, is the
	// same route without a look at it; so is one at another
	// resourceVersion that only a status write made.
	if mr.meta != meta && (meta.ResourceVersion == "" || mr.uid != meta.UID || (mr.rv != meta.ResourceVersion && !statusOnlyChange(mr.meta, meta))) {
		return nil
	}
	if !t.replaySets(mr.sets) {
		return nil
	}
	p.hits++
	if mr.gen != p.gen {
		p.current++
	}
	mr.gen, mr.rank = p.gen, p.ranked
	if mr.meta != meta {
		p.forgetObject(mr)
		mr.meta, mr.rv = meta, meta.ResourceVersion
		p.byMeta[meta] = mr
	}
	return mr
}

// statusOnlyChange reports that meta, a later version of the route old
// is of, differs from it at most in what no translation reads: its
// status (IgnoresStatus holds for both memo kinds), resourceVersion and
// the metadata a translation never looks at. Its generation, which the
// apiserver raises at every change of the spec, is old's, and so is the
// metadata a translation does read (metadataDigest, as objectID takes
// it for the environment's objects). The status writer's patch of every
// route it settles made each route change compile the route of the
// change before it again.
func statusOnlyChange(old, meta *metav1.ObjectMeta) bool {
	return meta.Generation != 0 && meta.Generation == old.Generation && metadataDigest(meta) == metadataDigest(old)
}

// forgetObject drops the object key of mr, which is about to name another
// object or be replaced: the Memo's sweep then has nothing to find.
func (p *memoPass) forgetObject(mr *memoRoute) {
	if p.byMeta[mr.meta] == mr {
		delete(p.byMeta, mr.meta)
	}
}

// kept is the Memo's entry for the route of memo kind kind named by
// meta, as the last translation left it (nil: none, or no memo kind),
// for a route whose object keptObject did not find.
func (p *memoPass) kept(kind string, meta *metav1.ObjectMeta) *memoRoute {
	if p == nil || kind == "" {
		return nil
	}
	return p.routes[memoKey{kind, meta.Namespace, meta.Name}]
}

// keptObject is the Memo's entry made from, or last matched with, the
// object of meta (nil: none), found without reading meta.
func (p *memoPass) keptObject(kind string, meta *metav1.ObjectMeta) *memoRoute {
	if p == nil || kind == "" {
		return nil
	}
	if mr := p.byMeta[meta]; mr != nil && mr.meta == meta {
		return mr
	}
	return nil
}

// nameOf is the name and generation of the route of meta: mr's, without
// reading meta, when mr was made from or matched with that very object.
func (mr *memoRoute) nameOf(meta *metav1.ObjectMeta) (nn, int64) {
	if mr != nil && mr.meta == meta {
		return mr.name, mr.generation
	}
	return key(meta), meta.Generation
}

// hostOrder is the hostnames of last, what the last translation built
// for a listener (nil: nothing), in order: the names its build listed,
// or those of its hosts when it was carried or patched (the names are
// listed only when a later translation builds that listener whole: at
// 10,000 hosts listing them at every translation was a tenth of a
// megabyte).
func hostOrder(last *builtListener) []string {
	switch {
	case last == nil:
		return nil
	case last.names != nil:
		return last.names
	}
	return hostnames(last.hosts)
}

// setOrder is the endpoint sets of a scope in order, and the scope
// builder that listed them (scopeBuilder.id).
type setOrder struct {
	names []string
	by    uint64
}

// setOrder is the endpoint sets scope had in the last translation, in
// order (nil: none, or no memo), and the scope builder that listed them
// (0: none).
func (p *memoPass) setOrder(scope snapshot.Scope) ([]string, uint64) {
	if p == nil {
		return nil, 0
	}
	o := p.lastSetOrder[scope]
	return o.names, o.by
}

// keepSetOrder keeps the endpoint sets of scope, in order, as listed by
// the scope builder by, for the next translation.
func (p *memoPass) keepSetOrder(scope snapshot.Scope, sets []string, by uint64) {
	if p != nil {
		p.nextSetOrder[scope] = setOrder{names: sets, by: by}
	}
}

// setList is a scope's endpoint sets in a translation, in order, and
// the Memo entry each was made from, when known (ends: as long as sets,
// or nil).
type setList struct {
	sets []*snapshot.EndpointSet
	ends []*memoEndpoints
}

// setList is scope's endpoint set list in the last translation.
func (p *memoPass) setList(scope snapshot.Scope) setList {
	if p == nil {
		return setList{}
	}
	return p.lastSetLists[scope]
}

// keepSetList keeps scope's endpoint set list for the next translation.
func (p *memoPass) keepSetList(scope snapshot.Scope, l setList) {
	if p != nil {
		p.nextSetLists[scope] = l
	}
}

// listenerOrder is the keys of scope's listeners in order in the last
// translation (nil: none, or no memo).
func (p *memoPass) listenerOrder(scope snapshot.Scope) []string {
	if p == nil {
		return nil
	}
	return p.lastListeners[scope]
}

// keepListenerOrder keeps the keys of scope's listeners, in order, for
// the next translation.
func (p *memoPass) keepListenerOrder(scope snapshot.Scope, keys []string) {
	if p != nil {
		p.nextListeners[scope] = keys
	}
}

// gatewayList is scope's Gateway list: refs, in order, which the
// translation's scratch holds (their port lists too), as a list of its
// own; the last translation's list when it is the same (at 1,000 Gateways
// a new list at every change was a tenth of what a route change
// allocated). It is kept for the next translation.
func (p *memoPass) gatewayList(scope snapshot.Scope, refs []snapshot.GatewayRef) []snapshot.GatewayRef {
	var last []snapshot.GatewayRef
	if p != nil {
		last = p.lastGateways[scope]
	}
	out := last
	if !slices.EqualFunc(refs, last, sameGatewayRef) {
		out = copyGatewayRefs(refs)
	}
	if p != nil {
		p.nextGateways[scope] = out
	}
	return out
}

// sameGatewayRef reports whether a and b are equal.
func sameGatewayRef(a, b snapshot.GatewayRef) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.Generation == b.Generation && slices.Equal(a.Ports, b.Ports)
}

// copyGatewayRefs is a copy of refs whose port lists share one array of
// their own (nil: none).
func copyGatewayRefs(refs []snapshot.GatewayRef) []snapshot.GatewayRef {
	if len(refs) == 0 {
		return nil
	}
	n := 0
	for _, r := range refs {
		n += len(r.Ports)
	}
	out := slices.Clone(refs)
	ports := make(portSlab, 0, n)
	for i := range out {
		start := len(ports)
		ports = append(ports, out[i].Ports...)
		out[i].Ports = ports.since(start)
	}
	return out
}

// ranking says the routes compiled or reattached next are at position i
// of their kind's order.
func (p *memoPass) ranking(i int) {
	if p != nil {
		p.ranked = i
	}
}

// lend is the kept compilation with the route of this translation's meta:
// the one kept when it is of that very object, else a copy of it with
// meta (an object of the same identity and resourceVersion, as an
// informer's relist makes).
func (mr *memoRoute) lend(meta *metav1.ObjectMeta) *compiledRoute {
	if mr.lentTo == meta {
		return mr.lent
	}
	cr := *mr.lent
	cr.meta = meta
	mr.lent, mr.lentTo = &cr, meta
	return &cr
}

// reattach is, for a route unchanged since the translation that attached
// it (kept, its entry then), its status for our parents, with its
// attachments made again; reused is false (compile and attach it) when
// there is no such route.
//
// A route's attachment (attach) reads the route, its compilation and the
// environment's Gateways, ListenerSets and Namespaces, never another
// route, so in an unchanged environment it is the same again.
func (p *memoPass) reattach(t *translator, kept *memoRoute, meta *metav1.ObjectMeta) (parents []gwv1.RouteParentStatus, reused bool) {
	if p == nil {
		return nil, false
	}
	p.stated = nil
	if kept == nil || !kept.attached {
		return nil, false
	}
	for _, a := range kept.atts {
		if a.ord > len(t.byOrd) {
			return nil, false // not this environment's numbering
		}
	}
	mr := p.unchanged(t, kept, meta)
	if mr == nil {
		return nil, false
	}
	cr := mr.lend(meta)
	for _, a := range mr.atts {
		st := &t.states[a.ord-1]
		if st.lastCounted != cr {
			st.lastCounted = cr
			st.attached++
		}
		if a.routed {
			st.routes = append(st.routes, attachment{cr: cr, hosts: a.hosts, bits: a.bits})
		}
	}
	p.stated = mr
	return mr.parents, true
}

// routeState is the RouteState of route k of generation gen with parents:
// the one of the last Result when the route's entry has it (the route
// that reattach or attachRoute just handled: attachRoute drops it), else
// a new one, kept in the entry. The entry's state is taken without a look
// at it (10,000 states scattered over the heap, a millisecond a
// translation). Without a Memo it is taken from states, a list with room.
func (p *memoPass) routeState(states *[]RouteState, k nn, gen int64, parents []gwv1.RouteParentStatus) *RouteState {
	if p == nil {
		*states = append(*states, RouteState{NamespacedName: k, Generation: gen, Parents: parents})
		return &(*states)[len(*states)-1]
	}
	mr := p.stated
	p.stated = nil
	if mr != nil && mr.state != nil {
		return mr.state
	}
	s := &RouteState{NamespacedName: k, Generation: gen, Parents: parents}
	if mr != nil {
		mr.state = s
	}
	return s
}

// attachRoute is attach(cr, refs), kept with the Memo's entry of cr's
// route for reattach.
func (t *translator) attachRoute(cr *compiledRoute, refs []gwv1.ParentReference) []gwv1.RouteParentStatus {
	p := t.memo
	if p == nil || p.cur == nil {
		return t.attach(cr, refs)
	}
	mr := p.cur
	p.cur, p.stated = nil, mr
	if mr != nil {
		mr.state = nil // new parents, whatever attach finds
	}
	var rec []memoAtt
	p.atts, p.attsOK = &rec, true
	parents := t.attach(cr, refs)
	if p.attsOK {
		if len(rec) == 1 {
			mr.att1[0] = rec[0]
			rec = mr.att1[:]
		}
		mr.attached, mr.parents, mr.atts = true, parents, rec
	}
	p.atts = nil
	return parents
}

// recordAtt notes a listener the route in attachRoute matched.
func (t *translator) recordAtt(li *listenerInfo, hosts []string, bits uint64, routed bool) {
	p := t.memo
	if p == nil || p.atts == nil {
		return
	}
	if li.ord < 1 || li.ord > len(t.byOrd) || t.byOrd[li.ord-1] != li {
		p.attsOK = false
		return
	}
	*p.atts = append(*p.atts, memoAtt{ord: li.ord, hosts: hosts, bits: bits, routed: routed})
}

// numberListeners gives every listener its ord (processGateways, once
// it made them).
func (t *translator) numberListeners() {
	number := func(lis []*listenerInfo) {
		for _, li := range lis {
			t.byOrd = append(t.byOrd, li)
			li.ord = len(t.byOrd)
		}
	}
	for _, gi := range t.gwOrder {
		number(gi.listeners)
	}
	for _, lsi := range t.lsOrder {
		number(lsi.listeners)
	}
}

// listenerStates makes the translation's listener states, with room, when
// a Memo runs, for as many routes as the last translation's listener of
// each ord (and an eighth more, for routes being added), in the arrays of
// the spare route lists.
func (t *translator) listenerStates() {
	t.states = t.scratch.listenerStates(len(t.byOrd))
	if p := t.memo; p != nil {
		for i := range t.states {
			var spare []attachment
			if i < len(p.spareRoutes) {
				spare = p.spareRoutes[i]
				clear(spare) // no compiled route kept alive by a spare list
			}
			if i < len(p.sizes.listenerRoutes) {
				t.states[i].routes = lists.Reuse(spare, p.sizes.listenerRoutes[i])
			} else if spare != nil {
				t.states[i].routes = spare[:0]
			}
		}
	}
}

// hostRoutes is the route list of host h of a listener: its entries, in
// emission order, sorted by precedence. It is the list of the last
// translation's host h (last, whose hosts the caller's successive calls,
// in hostname order, walk with at) if that was made from the same
// compiled routes in the same order (which sort the same way), else the
// list of the one compiled route of entries, else a new one, whose
// routes are recorded in from (nil: not recorded, without a Memo).
func (t *translator) hostRoutes(last *builtListener, from *hostSources, at *int, h string, entries []entry) []snapshot.Route {
	if last != nil {
		// Equal first: an unchanged host's name is the very string, which
		// equality tells at once and ordering compares byte by byte.
		for *at < len(last.hosts) && last.hosts[*at].Hostname != h && last.hosts[*at].Hostname < h {
			*at++
		}
		if *at < len(last.hosts) && last.hosts[*at].Hostname == h && last.from.made(last.hosts[*at].Routes, entries) {
			return last.hosts[*at].Routes
		}
	}
	if own := ownList(entries); own != nil {
		return own
	}
	var made []*snapshot.Route
	if from != nil {
		made = make([]*snapshot.Route, len(entries))
		for i := range entries {
			made[i] = entries[i].route
		}
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return a.key.compare(b.key) })
	routes := make([]snapshot.Route, len(entries))
	for i := range entries {
		routes[i] = *entries[i].route
	}
	if from != nil {
		from.add(routes, made)
	}
	return routes
}

// listenerSlot holds what a translation built for one listener of a
// scope: the last one's until this one keeps its own (keepBuilt). A
// listener builder finds its slot once (slotOf), and keeps what it built
// there without a look-up: at 1,000 Gateways, hashing each listener's
// scope and key for every look-up was a seventh of a route change.
type listenerSlot struct {
	built *builtListener
}

// slotOf is the slot of listener of scope, made when there is none (nil:
// no memo, or inputs it cannot trust).
func (p *memoPass) slotOf(scope snapshot.Scope, listener string) *listenerSlot {
	if p == nil || p.built == nil {
		return nil
	}
	id := listenerID{scope, listener}
	s := p.built[id]
	if s == nil {
		s = &listenerSlot{}
		p.built[id] = s
	}
	return s
}

// keepBuilt keeps b in slot s (nil: none) as what this translation built
// for its listener.
func (p *memoPass) keepBuilt(s *listenerSlot, b *builtListener) {
	if s != nil {
		b.gen = p.gen
		s.built = b
	}
}

// noteSizes keeps this translation's list lengths for the next.
func (t *translator) noteSizes() {
	p := t.memo
	if p == nil {
		return
	}
	p.sizes.listenerRoutes = p.sizes.listenerRoutes[:0]
	for i := range t.states {
		p.sizes.listenerRoutes = append(p.sizes.listenerRoutes, len(t.states[i].routes))
	}
	clear(p.spareRoutes)
	p.spareRoutes = lists.Reuse(p.spareRoutes, len(t.states))
	for i := range t.states {
		p.spareRoutes = append(p.spareRoutes, t.states[i].routes)
	}
	p.sizes.sources = len(t.sources) + len(t.scratch.remade)
}

// readyEndpoints is readyEndpoints(slices, src) for endpoint set name,
// the last translation's list when it was listed from the same source and
// the same slices, each at the same resourceVersion (a slice without one
// is never trusted).
func (t *translator) readyEndpoints(name string, slices []*discoveryv1.EndpointSlice, src endpointSource) ([]snapshot.Endpoint, *memoEndpoints) {
	p := t.memo
	if p == nil {
		return readyEndpoints(slices, src), nil
	}
	old := p.endpoints[name]
	if e := old; e != nil && e.src == src && len(e.slices) == len(slices) {
		same := true
		for i, s := range slices {
			if s != e.slices[i] || s.ResourceVersion == "" || s.ResourceVersion != e.rvs[i] {
				same = false
				break
			}
		}
		if same {
			p.stamp(e)
			return e.eps, e
		}
	}
	eps := readyEndpoints(slices, src)
	e := &memoEndpoints{src: src, slices: slices, rvs: make([]string, len(slices)), eps: eps}
	p.stamp(e)
	for i, s := range slices {
		e.rvs[i] = s.ResourceVersion
	}
	if old != nil {
		old.replaced = true
	}
	p.endpoints[name] = e
	return eps, e
}

// stamp marks endpoint entry e as this translation's (madeNow).
func (p *memoPass) stamp(e *memoEndpoints) {
	if e.gen != p.gen {
		e.gen = p.gen
		p.endpointsStamped++
	}
}

// plainSets reports whether a set the last translation made can be made
// again from its Memo entry alone (remakeSet): the environment is the
// last one's, the EndpointSlices the very list it indexed, and no
// BackendTLSPolicy or policy could add to a set.
func (t *translator) plainSets() bool {
	p := t.memo
	return p != nil && p.sameEnv && p.slicesKept && len(t.tlsByService) == 0 && len(t.tlsWinners) == 0 && len(t.policyWinners) == 0
}

// remakeSet makes c's endpoint set as the last translation did, from its
// Memo entry (plainSets must hold), and reports whether it could: that
// translation made it, for the protocol c asks. Its endpoints are that
// translation's (its EndpointSlices are the same), and the rest of a set
// without policies is its name and protocol. At 10,000 Services, making
// each set again (endpointSet), reading its Service, port and slices, was
// most of a route change.
//
// first says no set was made before in this translation, nor is c's set
// asked for twice: it is not looked up.
func (t *translator) remakeSet(c *setCall, first bool) bool {
	p := t.memo
	e := c.ends
	if e == nil || e.replaced || e.madeGen+1 != p.gen || e.gen+1 != p.gen || e.madeProto != c.proto {
		return false
	}
	if first || t.set(c.name) == nil {
		// The set a list held last time is the one made again: its
		// name, protocol and endpoints are e's of then, which are e's.
		es := e.listed
		if es == nil || e.listedIn+1 != p.gen {
			es = t.scratch.newSet()
			es.Name, es.AppProtocol, es.Endpoints = c.name, e.madeApp, e.eps
		}
		e.remade, e.remadeIn = es, p.gen                                  // not written into t.endpointSets: set finds it
		t.scratch.remade = append(t.scratch.remade, remadeSet{c.name, e}) // its source, for keepSources
	}
	p.stamp(e)
	e.madeGen = p.gen
	return true
}

// set is the endpoint set of this translation named name (nil: none):
// in t.endpointSets, or made by remakeSet. Writing each of 10,000 remade
// sets into the map at every route change was a twentieth of the change.
//
// A name is in one of the two, never both (each is made once), and most
// sets of a route change are remade: the Memo is asked first.
func (t *translator) set(name string) *snapshot.EndpointSet {
	es, _ := t.setOf(name)
	return es
}

// setOf is set(name), and the Memo entry it was remade from (nil: made
// otherwise).
func (t *translator) setOf(name string) (*snapshot.EndpointSet, *memoEndpoints) {
	if p := t.memo; p != nil && len(t.scratch.remade) > 0 {
		if e := p.endpoints[name]; e != nil && e.remadeIn == p.gen {
			return e.remade, e
		}
	}
	return t.endpointSets[name], nil
}

// setToChange is set(name), a copy of its own when it is a set a list
// held (the last translation's snapshots still do): markH2C changes the
// set it gets.
func (t *translator) setToChange(name string) *snapshot.EndpointSet {
	es, e := t.setOf(name)
	if e != nil && es == e.listed {
		cp := t.scratch.newSet()
		*cp = *es
		e.remade, es = cp, cp
	}
	return es
}

// remadeFrom is the set remakeSet made from e in this translation (nil:
// none). Such an entry is its name's: remakeSet refuses a replaced one,
// and a set once made is not made again.
func (p *memoPass) remadeFrom(e *memoEndpoints) *snapshot.EndpointSet {
	if e == nil || e.remadeIn != p.gen {
		return nil
	}
	return e.remade
}

// recordSet notes an endpointSet call made by a compilation in progress.
func (t *translator) recordSet(svc *corev1.Service, sp *corev1.ServicePort, proto snapshot.AppProtocol, name string) {
	if t.memo == nil || t.memo.rec == nil {
		return
	}
	for i := range svc.Spec.Ports {
		if &svc.Spec.Ports[i] != sp {
			continue
		}
		c := setCall{service: key(&svc.ObjectMeta), port: i, proto: proto, name: name}
		for _, r := range *t.memo.rec {
			if r.service == c.service && r.port == c.port {
				return // a call after the first changes nothing
			}
		}
		*t.memo.rec = append(*t.memo.rec, c)
		return
	}
}

// replaySets makes a memoized compilation's endpointSet calls again; it
// reports false (compile afresh) if a Service or port is gone, which an
// unchanged environment rules out. A call naming a set this translation
// already made changes nothing, and is skipped.
func (t *translator) replaySets(calls []setCall) bool {
	var buf [4]*corev1.Service
	svcs := buf[:0]
	for i := range calls {
		c := &calls[i]
		if t.memo.madeNow(c.ends) {
			svcs = append(svcs, nil)
			continue
		}
		if t.set(c.name) != nil {
			c.ends = t.memo.endpoints[c.name]
			svcs = append(svcs, nil)
			continue
		}
		svc := t.ix.services[c.service]
		if svc == nil || c.port >= len(svc.Spec.Ports) {
			return false
		}
		svcs = append(svcs, svc)
	}
	for i := range calls {
		if c := &calls[i]; svcs[i] != nil {
			t.endpointSet(svcs[i], &svcs[i].Spec.Ports[c.port], c.proto)
			c.ends = t.memo.endpoints[c.name]
		}
	}
	return true
}

// memoizedCompile wraps a route kind's compile function with the pass's
// memo (compile itself when there is none).
func memoizedCompile[R any](t *translator, kind string, parts func(*R) (*metav1.ObjectMeta, []gwv1.ParentReference), compile func(*R) *compiledRoute) func(*R) *compiledRoute {
	if t.memo == nil {
		return compile
	}
	return func(r *R) *compiledRoute {
		meta, _ := parts(r)
		return t.memo.compile(t, kind, meta, func() *compiledRoute { return compile(r) })
	}
}

// routeInputs are the fields of Resources a route's compilation does not
// read through the translator: the routes themselves (each memoized on
// its own resourceVersion) and the EndpointSlices (read only into endpoint
// sets, which are rebuilt).
var routeInputs = map[string]bool{
	"HTTPRoutes": true, "GRPCRoutes": true, "TLSRoutes": true, "TCPRoutes": true, "UDPRoutes": true,
	"EndpointSlices": true,
}

var objectType = reflect.TypeFor[metav1.Object]()

// envIDs remembers the id (objectID) of each object of the environments
// it digested, by object: an informer's store hands out the same object
// until it changes, and at 1,000 Gateways and their VIP Services building
// every id again was a tenth of a translation. An id is taken only for the
// object at the resourceVersion it was made at; the objects a digest did
// not see are forgotten. It remembers each field's digest too (fieldSum),
// for a field whose objects are the ones it had last time, and takes it
// without a look at them when the field is the very list it was (the
// provider hands over a kind's list again while no event came for it).
type envIDs struct {
	byObject map[any]envID
	fields   map[int]envField
	gen      uint64
	// walked is, for each of the first 64 fields, the last digest that
	// went through its objects one by one: an object that digest saw in a
	// field taken since as the same list is in it still, and remembered.
	walked [64]uint64
	// replaced counts the fields found the same though they list objects
	// no digest had seen (replacedAlike).
	replaced int
	// Of the digest in progress: the lists the fields it went through
	// one by one had before (their objects may be listed no more), or
	// fullSweep when one of them had none remembered.
	walkedFrom []any
	fullSweep  bool
	// fixed says the objects are never changed in place (NewStoreMemo):
	// an object remembered is at the resourceVersion it had.
	fixed bool
}

// isObjects reports whether fv lists objects (its sum is their ids').
func isObjects(fv reflect.Value) bool {
	return fv.Kind() == reflect.Slice && fv.Type().Elem().Implements(objectType)
}

// envID is an object's id at resourceVersion rv, and the fields (by
// index, a bit each) that listed it in the digest gen (cur) and in the
// digest before it (prev).
type envID struct {
	rv, id    string
	gen       uint64
	prev, cur uint64
	// idGen is the digest that took id (another field that lists the
	// object may have taken a new one in this digest).
	idGen uint64
}

// envField is one field's digest and object count in the digest gen.
type envField struct {
	sum [sha256.Size]byte
	n   int
	gen uint64
	// list is the field's list (nil: not a non-empty list), which keeps
	// its array from being freed and its memory reused; rvs are, for a
	// list of objects, their resourceVersions.
	list any
	rvs  []string
}

// sameList reports whether fv is the very non-empty list f is the digest
// of, of the digest before gen: as long and of the same array (a
// Resources' lists are never modified in place, nor the objects they
// list).
func (f envField) sameList(fv reflect.Value, gen uint64) bool {
	return f.gen == gen-1 && f.list != nil && fv.Kind() == reflect.Slice && fv.Len() > 0 && f.n == fv.Len() &&
		reflect.ValueOf(f.list).Pointer() == fv.Pointer()
}

// digest is envDigest(res), with the ids and field digests remembered.
func (e *envIDs) digest(res *Resources) ([sha256.Size]byte, bool) {
	if e.byObject == nil {
		e.byObject, e.fields = map[any]envID{}, map[int]envField{}
	}
	e.gen++
	e.walkedFrom, e.fullSweep = e.walkedFrom[:0], false
	d, ok := envDigestWith(res, e.fieldSum)
	e.sweep()
	maps.DeleteFunc(e.fields, func(_ int, f envField) bool { return f.gen != e.gen })
	return d, ok
}

// sweep forgets the objects this digest did not see that no field lists
// still (stillListed). Only the objects of a field it went through one by
// one can have stopped being listed, and each was in that field's last
// list (walkedFrom); an object of no such field is where the last sweep
// left it. So only those lists are looked at: at 10,000 Services and
// EndpointSlices, a walk of every object remembered at every route change
// (whose Gateway's status write makes a new Gateway list) was a fifteenth
// of the change. Without one of those lists, every object is.
func (e *envIDs) sweep() {
	defer clear(e.walkedFrom) // keeping no list alive
	stale := func(x envID) bool { return x.gen != e.gen && !e.stillListed(x) }
	if e.fullSweep {
		maps.DeleteFunc(e.byObject, func(_ any, x envID) bool { return stale(x) })
		return
	}
	for _, list := range e.walkedFrom {
		lv := reflect.ValueOf(list)
		for j := range lv.Len() {
			v := lv.Index(j)
			if v.IsNil() {
				continue
			}
			key := v.Interface()
			if x, ok := e.byObject[key]; ok && stale(x) {
				delete(e.byObject, key)
			}
		}
	}
}

// stillListed reports whether x, not seen by this digest, is in a field
// taken as the same list since the digest that last saw it.
func (e *envIDs) stillListed(x envID) bool {
	for b := x.cur; b != 0; b &= b - 1 {
		if e.walked[bits.TrailingZeros64(b)] == x.gen {
			return true
		}
	}
	return false
}

// seen marks x as listed by field (a bit) in this digest, and reports
// whether it was already (the object twice in one list).
func (e *envIDs) seen(x *envID, field uint64) (twice bool) {
	if x.gen != e.gen {
		x.prev = 0
		if x.gen == e.gen-1 {
			x.prev = x.cur
		}
		x.cur, x.gen = 0, e.gen
	}
	twice = x.cur&field != 0
	x.cur |= field
	return twice
}

// fieldSum is sortedIDsSum of field i, fv, or the last digest's sum of
// it when fv holds the objects it held then (as many, each listed by it
// then and with the id it had), which needs neither a sort nor a hash.
func (e *envIDs) fieldSum(i int, fv reflect.Value) ([sha256.Size]byte, bool) {
	if !isObjects(fv) {
		return e.valueSum(i, fv)
	}
	bit := uint64(1) << (i % 64)
	last, had := e.fields[i]
	if had && i < 64 && last.sameList(fv, e.gen) && (e.fixed || sameVersions(fv, last.rvs)) {
		last.gen = e.gen
		e.fields[i] = last
		return last.sum, true
	}
	if i < 64 {
		e.walked[i] = e.gen
	}
	switch {
	case !had || i >= 64 || (last.list == nil && last.n > 0):
		e.fullSweep = true
	case last.list != nil:
		e.walkedFrom = append(e.walkedFrom, last.list)
	}
	same := i < 64 && had && last.gen == e.gen-1 && last.n == fv.Len()
	// fresh are the objects no digest has seen: a status write makes a
	// new object of an unchanged id (a Gateway's, at every route change).
	var fresh []reflect.Value
	for j := range fv.Len() {
		v := fv.Index(j)
		if v.IsNil() {
			same = false
			continue
		}
		key := v.Interface()
		x, ok := e.byObject[key]
		if !ok {
			if same && len(fresh) < maxFreshObjects {
				fresh = append(fresh, v)
			} else {
				same = false
			}
			continue
		}
		if rv := e.versionOf(key, x); x.rv != rv {
			id, ok := objectID(v)
			if !ok || id != x.id {
				same = false
				continue // e.idIn takes it below
			}
			x.rv = rv
		}
		if e.seen(&x, bit) || x.prev&bit == 0 || x.idGen == e.gen {
			same = false
		}
		e.byObject[key] = x
	}
	if same && len(fresh) > 0 {
		same = e.replacedAlike(bit, last, fresh)
		if same {
			e.replaced++
		}
	}
	if same {
		last.gen, last.list, last.rvs = e.gen, listOf(fv), e.versionsOf(fv)
		e.fields[i] = last
		return last.sum, true
	}
	sum, ok := sortedIDsSum(fv, func(v reflect.Value) (string, bool) { return e.idIn(v, bit) })
	if ok {
		e.fields[i] = envField{sum: sum, n: fv.Len(), gen: e.gen, list: listOf(fv), rvs: e.versionsOf(fv)}
	}
	return sum, ok
}

// maxFreshObjects is the most objects no digest has seen that a field may
// list and still be found the same as last time (replacedAlike).
const maxFreshObjects = 8

// replacedAlike reports whether fresh, the objects of a field (a bit) no
// digest has seen, have the ids of the objects of its last list (last)
// it lists no more: the same ids, as often. Every other object it lists
// was in that list, once, with the id it has (fieldSum checked), and it
// lists as many as last; so its ids are then last's and so is its sum.
// The fresh objects are remembered, as listed by the field.
func (e *envIDs) replacedAlike(bit uint64, last envField, fresh []reflect.Value) bool {
	lv := reflect.ValueOf(last.list)
	if !lv.IsValid() || lv.Kind() != reflect.Slice {
		return false
	}
	var gone []string
	for j := range lv.Len() {
		v := lv.Index(j)
		if v.IsNil() {
			return false
		}
		x, ok := e.byObject[v.Interface()]
		if !ok {
			return false
		}
		if x.gen != e.gen || x.cur&bit == 0 { // not in the field now
			if x.idGen == e.gen {
				return false // its id changed in this digest: not the one last summed
			}
			if gone = append(gone, x.id); len(gone) > len(fresh) {
				return false
			}
		}
	}
	if len(gone) != len(fresh) {
		return false
	}
	ids := make([]string, len(fresh))
	for j, v := range fresh {
		id, ok := e.idIn(v, bit)
		if !ok {
			return false
		}
		ids[j] = id
	}
	slices.Sort(ids)
	slices.Sort(gone)
	return slices.Equal(ids, gone)
}

// versionOf is the resourceVersion of obj, remembered as x: x's when the
// objects are never changed in place.
func (e *envIDs) versionOf(obj any, x envID) string {
	if e.fixed {
		return x.rv
	}
	return obj.(metav1.Object).GetResourceVersion()
}

// versionsOf lists the resourceVersions of fv's objects ("" for nil), for
// sameVersions; none when the objects are never changed in place.
func (e *envIDs) versionsOf(fv reflect.Value) []string {
	if e.fixed {
		return nil
	}
	out := make([]string, fv.Len())
	for j := range out {
		if v := fv.Index(j); !v.IsNil() {
			out[j] = v.Interface().(metav1.Object).GetResourceVersion()
		}
	}
	return out
}

// sameVersions reports whether fv's objects have the resourceVersions
// rvs (versionsOf): an object changed in place has a new one.
func sameVersions(fv reflect.Value, rvs []string) bool {
	if len(rvs) != fv.Len() {
		return false
	}
	for j, rv := range rvs {
		v := fv.Index(j)
		if v.IsNil() || rv == "" || v.Interface().(metav1.Object).GetResourceVersion() != rv {
			return false
		}
	}
	return true
}

// valueSum is valueSum(fv) of field i, or the last digest's when fv is
// the very list it was then (as long and of the same array: a Resources'
// lists are never modified in place, and ServiceSorter hands over the
// same InternalPorts while the Services are the same).
func (e *envIDs) valueSum(i int, fv reflect.Value) ([sha256.Size]byte, bool) {
	if last, ok := e.fields[i]; ok && last.sameList(fv, e.gen) {
		last.gen = e.gen
		e.fields[i] = last
		return last.sum, true
	}
	sum, ok := valueSum(fv)
	if list := listOf(fv); ok && list != nil {
		e.fields[i] = envField{sum: sum, n: fv.Len(), gen: e.gen, list: list}
	}
	return sum, ok
}

// listOf is fv when it is a non-empty list, else nil.
func listOf(fv reflect.Value) any {
	if fv.Kind() != reflect.Slice || fv.Len() == 0 {
		return nil
	}
	return fv.Interface()
}

// idIn is objectID(v), remembered for v's object, which field (a bit)
// lists.
func (e *envIDs) idIn(v reflect.Value, field uint64) (string, bool) {
	if v.IsNil() {
		return objectID(v)
	}
	key := v.Interface()
	rv := key.(metav1.Object).GetResourceVersion()
	x, ok := e.byObject[key]
	if !ok || x.rv != rv {
		id, idOK := objectID(v)
		if !idOK {
			return id, false
		}
		if !ok {
			x = envID{}
		}
		if id != x.id {
			x.idGen = e.gen
		}
		x.rv, x.id = rv, id
	}
	e.seen(&x, field)
	e.byObject[key] = x
	return x.id, true
}

// envDigest is a digest of every input of res but routeInputs: the
// identity and resourceVersion of each object, in any order, and the value
// of every other field. It reports false if an object has no
// resourceVersion (its changes could not be seen). It is compared within
// this process only.
func envDigest(res *Resources) ([sha256.Size]byte, bool) {
	return envDigestWith(res, func(_ int, fv reflect.Value) ([sha256.Size]byte, bool) {
		if isObjects(fv) {
			return sortedIDsSum(fv, objectID)
		}
		return valueSum(fv)
	})
}

// valueSum is a digest of the value of a field that holds no objects.
func valueSum(fv reflect.Value) ([sha256.Size]byte, bool) {
	b, err := json.Marshal(fv.Interface())
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(b), true
}

// sortedIDsSum is a digest of the ids of a list of objects, in any order.
func sortedIDsSum(fv reflect.Value, objectID func(reflect.Value) (string, bool)) ([sha256.Size]byte, bool) {
	ids := make([]string, 0, fv.Len())
	for j := range fv.Len() {
		id, ok := objectID(fv.Index(j))
		if !ok {
			return [sha256.Size]byte{}, false
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d, true
}

// envDigestWith is envDigest with fieldSum as the digest of a field that
// is not one object (sortedIDsSum or valueSum).
func envDigestWith(res *Resources, fieldSum func(field int, fv reflect.Value) ([sha256.Size]byte, bool)) ([sha256.Size]byte, bool) {
	h := sha256.New()
	v := reflect.ValueOf(res).Elem()
	typ := v.Type()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if routeInputs[f.Name] || !f.IsExported() {
			continue
		}
		h.Write([]byte(f.Name))
		h.Write([]byte{0})
		fv := v.Field(i)
		if fv.Type().Implements(objectType) {
			id, ok := objectID(fv)
			if !ok {
				return [sha256.Size]byte{}, false
			}
			h.Write([]byte(id))
		} else {
			sum, ok := fieldSum(i, fv)
			if !ok {
				return [sha256.Size]byte{}, false
			}
			h.Write(sum[:])
		}
		h.Write([]byte{0})
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d, true
}

// objectID identifies an object of the environment at its current
// content ("" for a nil one), false when that cannot be told: its
// resourceVersion, or, for a kind whose status Translate never reads
// (IgnoresStatus) and that has a generation, the generation, labels,
// annotations and deletionTimestamp (so that our own status writes, which
// change every Gateway's attachedRoutes, do not count as changes).
func objectID(v reflect.Value) (string, bool) {
	if v.IsNil() {
		return "\x00nil\x00", true
	}
	o := v.Interface().(metav1.Object)
	if o.GetResourceVersion() == "" {
		return "", false
	}
	id := o.GetNamespace() + "/" + o.GetName() + "/" + string(o.GetUID()) + "/"
	if g := o.GetGeneration(); g != 0 && IgnoresStatus(v.Interface()) {
		return id + "g" + strconv.FormatInt(g, 10) + "/" + metadataDigest(o) + "\x00", true
	}
	return id + o.GetResourceVersion() + "\x00", true
}

// metadataDigest is a digest of an object's labels, annotations and
// deletionTimestamp.
func metadataDigest(o metav1.Object) string {
	h := sha256.New()
	for _, m := range []map[string]string{o.GetLabels(), o.GetAnnotations()} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			h.Write([]byte(k))
			h.Write([]byte{0})
			h.Write([]byte(m[k]))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	if t := o.GetDeletionTimestamp(); t != nil {
		h.Write([]byte(t.UTC().Format(time.RFC3339)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// maxSharedConds bounds the Memo's shared condition and parent lists.
const maxSharedConds = 4096

// routeConds is a route parent's conditions, a and b in type order: the
// list of the Memo's any status with these conditions has (statuses are
// never modified), else a new one.
func (p *memoPass) routeConds(a, b metav1.Condition) []metav1.Condition {
	pair := [2]metav1.Condition{a, b}
	sortConds(pair[:])
	if p == nil || p.conds == nil {
		return pair[:]
	}
	if c, ok := p.conds[pair]; ok {
		return c
	}
	c := pair[:]
	p.conds[pair] = c
	return c
}

// parentKey is what a route's status of one parent says: its parentRef
// (set says which of its optional fields are), and its conditions' list.
type parentKey struct {
	group, kind, namespace, name, section string
	port                                  int32
	set                                   uint8
	conds                                 *metav1.Condition
}

// routeParents is the status of a route with one parent, ps: the list of
// the Memo's any route with the very same has (statuses are never
// modified), else ps. The conditions must be routeConds's.
func (p *memoPass) routeParents(ps []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	if p == nil || p.parents == nil || len(ps) != 1 || len(ps[0].Conditions) == 0 {
		return ps
	}
	ref := &ps[0].ParentRef
	k := parentKey{name: string(ref.Name), conds: &ps[0].Conditions[0]}
	if ref.Group != nil {
		k.group, k.set = string(*ref.Group), k.set|1
	}
	if ref.Kind != nil {
		k.kind, k.set = string(*ref.Kind), k.set|2
	}
	if ref.Namespace != nil {
		k.namespace, k.set = string(*ref.Namespace), k.set|4
	}
	if ref.SectionName != nil {
		k.section, k.set = string(*ref.SectionName), k.set|8
	}
	if ref.Port != nil {
		k.port, k.set = int32(*ref.Port), k.set|16
	}
	if shared, ok := p.parents[k]; ok && shared[0].ControllerName == ps[0].ControllerName && len(shared[0].Conditions) == len(ps[0].Conditions) {
		return shared
	}
	p.parents[k] = ps
	return ps
}
