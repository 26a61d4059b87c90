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

// The discovery fan-out benchmark (bench/fanout.sh): one discovery server,
// N proxy clients in a child process (this test binary re-executed), real
// mTLS with SVIDs from a real discovery CA. TestFanout publishes changes of
// a shared-pool snapshot and measures, per change, the time from Publish
// to every client's ack (as the server records it) and the server
// process's CPU time from Publish until all have acked. It is skipped
// unless -fanout.clients is set.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/identity"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

var (
	fanoutClients       = flag.Int("fanout.clients", 0, "TestFanout: proxy clients to connect (0 skips the fan-out benchmark)")
	fanoutRounds        = flag.Int("fanout.rounds", 5, "TestFanout: changes measured of each kind (full and delta)")
	fanoutRoutes        = flag.Int("fanout.routes", 1000, "TestFanout: routes of the shared-pool snapshot, each with its own endpoint set")
	fanoutGateways      = flag.Int("fanout.gateways", 10, "TestFanout: Gateways (one HTTP listener each) the routes are spread over")
	fanoutMode          = flag.String("fanout.client", "real", "TestFanout: real (discovery.Client: reassemble, validate, apply, ack) or raw (ack each message without decoding it)")
	fanoutPin           = flag.Bool("fanout.pin", false, "TestFanout: start the clients' process with taskset -c 1 (run the test itself under taskset -c 0)")
	fanoutKinds         = flag.String("fanout.kinds", "full,delta", "TestFanout: the kinds of change measured each round: full (every resource changes), delta (one endpoint)")
	fanoutIdle          = flag.Duration("fanout.idle", 3*time.Second, "TestFanout: how long to measure the server's CPU with every client connected and nothing changing")
	fanoutClientProfile = flag.String("fanout.clientprofile", "", "TestFanout: profile the clients' process's CPU over its whole run into this file")
	fanoutProfile       = flag.String("fanout.cpuprofile", "", "TestFanout: profile the server process's CPU over each measured change into PREFIX-<kind>-<round>.pprof (go tool pprof merges them)")
)

// The child process's environment.
const (
	fanoutChildEnv   = "COXSWAIN_FANOUT_CHILD"
	fanoutAddrEnv    = "COXSWAIN_FANOUT_ADDR"
	fanoutDirEnv     = "COXSWAIN_FANOUT_DIR"
	fanoutClientsEnv = "COXSWAIN_FANOUT_CLIENTS"
	fanoutModeEnv    = "COXSWAIN_FANOUT_MODE"
	fanoutProfileEnv = "COXSWAIN_FANOUT_PROFILE"
)

// fanoutWait bounds every wait of the benchmark.
const fanoutWait = 10 * time.Minute

func TestFanout(t *testing.T) {
	n := *fanoutClients
	if n <= 0 {
		t.Skip("the discovery fan-out benchmark runs with -fanout.clients=N (bench/fanout.sh)")
	}
	if *fanoutMode != "real" && *fanoutMode != "raw" {
		t.Fatalf("-fanout.client=%q: want real or raw", *fanoutMode)
	}
	if *fanoutGateways <= 0 || *fanoutRoutes < *fanoutGateways {
		t.Fatal("-fanout.routes must be at least -fanout.gateways, which must be positive")
	}
	raiseFileLimit(t, uint64(n)+256)

	// The discovery CA and the controller's serving SVID; the child signs
	// its clients' SVIDs with the same CA.
	dir := t.TempDir()
	certPEM, keyPEM, err := identity.GenerateAuthority(td, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca := fanoutCA(t, certPEM, keyPEM)
	for name, b := range map[string][]byte{"ca.pem": certPEM, "ca-key.pem": keyPEM, "bundle.pem": ca.BundlePEM(), "token": []byte("unused")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	serving, err := identity.NewServingSVID(ca, mustID(t, installNS, names.ControllerServiceAccount), 0)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := discovery.NewServer(discovery.ServerOptions{
		TrustDomain: td,
		SVID:        serving,
		Bundle:      ca,
		IsLeader:    func() bool { return true },
		Authorizer:  testAuthorizer(),
		Registerer:  reg,
		Log:         logr.Discard(),
		// LeaderCheckInterval: the default (1s), as in the controller.
	})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); <-served })

	state := newFanoutState(*fanoutRoutes, *fanoutGateways)
	cur := state.snapshot()
	if err := srv.Publish([]*snapshot.Snapshot{cur}); err != nil {
		t.Fatal(err)
	}
	res, err := snapshot.ResourcesIn(discovery.RichestLayout, cur)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("Discovery fan-out: %d clients (%s) in a child process, one server, 127.0.0.1, mTLS with SVIDs, GOMAXPROCS server %d\n",
		n, *fanoutMode, runtime.GOMAXPROCS(0))
	fmt.Printf("snapshot: shared pool, %d routes on %d Gateways, %d endpoint sets of 3 endpoints: %d resources, %.0f KiB\n",
		*fanoutRoutes, *fanoutGateways, *fanoutRoutes, len(res), float64(changedBytes(nil, res))/1024)

	// Connect every client; each gets the full snapshot.
	u0, s0 := rusage()
	start := time.Now()
	child := startFanoutChild(t, lis.Addr().String(), dir, n)
	childCPU := child.expect(t, "done")
	u1, s1 := rusage()
	proxies := waitInSync(t, srv, n, "the initial snapshot", func() { u1, s1 = rusage() })
	fmt.Printf("connect + initial full snapshot: all %d acked %s after the child started; server CPU %s; clients' process CPU %s (SVID signing included)\n",
		n, ms(lastAck(proxies).Sub(start)), ms(u1+s1-u0-s0), ms(childCPU))

	// What the open streams cost with nothing to send (leader checks,
	// keepalives): a change's CPU window includes it.
	var idle float64 // server CPU seconds per second
	if *fanoutIdle > 0 {
		runtime.GC()
		time.Sleep(200 * time.Millisecond)
		u0, s0 := rusage()
		i0 := time.Now()
		time.Sleep(*fanoutIdle)
		u1, s1 := rusage()
		idle = float64(u1+s1-u0-s0) / float64(time.Since(i0))
		fmt.Printf("idle: the %d open streams cost the server %.1f ms CPU per second\n", n, idle*1000)
	}

	var results []fanoutResult
	prev := res
	for round := range *fanoutRounds {
		for _, kind := range strings.Split(*fanoutKinds, ",") {
			switch kind {
			case "full":
				state.changeAll()
			case "delta":
				state.changeOne(round)
			default:
				t.Fatalf("-fanout.kinds: unknown kind %q (full, delta)", kind)
			}
			next := state.snapshot()
			profile := ""
			if *fanoutProfile != "" {
				profile = fmt.Sprintf("%s-%s-%d.pprof", *fanoutProfile, kind, round+1)
			}
			r := measureChange(t, srv, reg, child, n, kind, prev, next, profile)
			results = append(results, r)
			prev = r.resources
		}
	}
	printFanout(results, n, idle)
}

// fanoutResult is one measured change.
type fanoutResult struct {
	kind      string
	resources []snapshot.Resource // of the published snapshot
	msgBytes  int                 // resource keys and bodies the change sends each client
	publish   time.Duration       // Publish's own time (wire form, version)
	acks      []time.Duration     // Publish → the server's receipt of each client's ack
	all       time.Duration       // Publish → the last ack
	window    time.Duration       // Publish → the CPU reading after all applied
	user, sys time.Duration       // the server process's CPU time, Publish → all acked
	clients   time.Duration       // the clients' process's CPU time
	sent      map[string]float64  // messages sent, by type (full, delta)
}

// measureChange publishes next and waits until every client has acked it;
// with a profile file name, it profiles the server process's CPU over that
// window into it.
func measureChange(t *testing.T, srv *discovery.Server, reg *prometheus.Registry, child *fanoutChild, n int, kind string, prev []snapshot.Resource, next *snapshot.Snapshot, profile string) fanoutResult {
	t.Helper()
	res, err := snapshot.ResourcesIn(discovery.RichestLayout, next)
	if err != nil {
		t.Fatal(err)
	}
	r := fanoutResult{kind: kind, resources: res, msgBytes: changedBytes(prev, res)}
	// Every change starts from a collected heap and an idle server.
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	sent := func() map[string]float64 {
		m := map[string]float64{}
		for _, typ := range []string{"full", "delta"} {
			m[typ] = metric(t, reg, "coxswain_discovery_snapshots_sent_total", map[string]string{"type": typ})
		}
		return m
	}
	sent0 := sent()
	childCPU0 := child.command(t, "next", "ok")
	stopProfile := func() {}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		stopProfile = func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				t.Error(err)
			}
		}
	}

	u0, s0 := rusage()
	t0 := time.Now()
	if err := srv.Publish([]*snapshot.Snapshot{next}); err != nil {
		t.Fatal(err)
	}
	r.publish = time.Since(t0)
	childCPU1 := child.expect(t, "done")
	u1, s1 := rusage()
	end := time.Now()
	stopProfile()
	proxies := waitInSync(t, srv, n, "the "+kind+" change", func() { u1, s1 = rusage(); end = time.Now() })

	r.user, r.sys, r.clients = u1-u0, s1-s0, childCPU1-childCPU0
	r.window = end.Sub(t0)
	for _, p := range proxies {
		r.acks = append(r.acks, p.LastAck.Sub(t0))
	}
	r.all = lastAck(proxies).Sub(t0)
	r.sent = sent()
	for typ := range r.sent {
		r.sent[typ] -= sent0[typ]
	}
	return r
}

// waitInSync returns the server's fleet once n proxies have acked the
// current version. The child reports when its last client has applied the
// snapshot, a moment before that client's ack reaches the server; after
// every wait for it, waited runs (to take the CPU reading again).
func waitInSync(t *testing.T, srv *discovery.Server, n int, what string, waited func()) []discovery.Proxy {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		proxies, _ := srv.Fleet()
		k := countInSync(proxies)
		if len(proxies) == n && k == n {
			return proxies
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the clients' process reported every client applied it, the server sees %d of %d in sync", what, k, n)
		}
		time.Sleep(time.Millisecond)
		waited()
	}
}

func countInSync(proxies []discovery.Proxy) int {
	k := 0
	for _, p := range proxies {
		if p.InSync && p.LastAck != nil {
			k++
		}
	}
	return k
}

func lastAck(proxies []discovery.Proxy) time.Time {
	var last time.Time
	for _, p := range proxies {
		if p.LastAck != nil && p.LastAck.After(last) {
			last = *p.LastAck
		}
	}
	return last
}

// changedBytes is the size of the resources (key and body) of next that are
// new or differ from prev: what a delta from prev to next carries.
func changedBytes(prev, next []snapshot.Resource) int {
	old := make(map[string][]byte, len(prev))
	for _, r := range prev {
		old[r.Key] = r.Body
	}
	total := 0
	for _, r := range next {
		if b, ok := old[r.Key]; !ok || string(b) != string(r.Body) {
			total += len(r.Key) + len(r.Body)
		}
	}
	return total
}

// printFanout prints the figures of every kind of change (medians over
// the changes, ack percentiles over every client of every change), then
// every change; idle is the server's CPU seconds per second with nothing
// changing ("above idle" subtracts it over each change's window).
func printFanout(results []fanoutResult, n int, idle float64) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "change\tchanges\tmessage\tack p50\tack p90\tack p99\tack max\tall acked (median)\tall acked (max)\tserver CPU/change (median)\tabove idle\tof which Publish\tclients CPU/change\t\n")
	for _, kind := range []string{"full", "delta"} {
		var acks, all, cpu, above, pub, clients []time.Duration
		msg := 0
		for _, r := range results {
			if r.kind != kind {
				continue
			}
			acks = append(acks, r.acks...)
			all = append(all, r.all)
			cpu = append(cpu, r.user+r.sys)
			above = append(above, r.user+r.sys-time.Duration(idle*float64(r.window)))
			pub = append(pub, r.publish)
			clients = append(clients, r.clients)
			msg = r.msgBytes
		}
		if len(all) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", kind, len(all), kib(msg),
			ms(pct(acks, 0.50)), ms(pct(acks, 0.90)), ms(pct(acks, 0.99)), ms(pct(acks, 1)),
			ms(pct(all, 0.5)), ms(pct(all, 1)), ms(pct(cpu, 0.5)), ms(pct(above, 0.5)), ms(pct(pub, 0.5)), ms(pct(clients, 0.5)))
	}
	_ = w.Flush()
	fmt.Println("every change (ack percentiles over its", n, "clients; server CPU user+sys):")
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "change\tp50\tp90\tp99\tmax\tall acked\tserver user\tserver sys\tPublish\tclients CPU\tsent delta\tsent full\t\n")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t\n", r.kind,
			ms(pct(r.acks, 0.5)), ms(pct(r.acks, 0.9)), ms(pct(r.acks, 0.99)), ms(pct(r.acks, 1)), ms(r.all),
			ms(r.user), ms(r.sys), ms(r.publish), ms(r.clients), r.sent["delta"], r.sent["full"])
	}
	_ = w.Flush()
}

// pct is the nearest-rank q-quantile of ds.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func kib(b int) string { return fmt.Sprintf("%.1f KiB", float64(b)/1024) }

// rusage is this process's user and system CPU time so far.
func rusage() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// raiseFileLimit raises the soft open-files limit to want if it is lower
// (every client, and every server end, is a socket).
func raiseFileLimit(t *testing.T, want uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur >= want {
		return
	}
	rl.Cur = min(want, rl.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < want {
		t.Fatalf("the open files limit is %d, the benchmark needs %d (raise the hard limit)", rl.Cur, want)
	}
}

// fanoutCA is the discovery CA of the given authority.
func fanoutCA(t *testing.T, certPEM, keyPEM []byte) *identity.CA {
	t.Helper()
	ca := identity.NewCA(td)
	if _, err := ca.SetAuthority(certPEM, keyPEM, nil); err != nil {
		t.Fatal(err)
	}
	return ca
}

// fanoutState is what the benchmark's snapshot is built from: routes spread
// over gateways (one HTTP listener each), one virtual host per route, and
// one endpoint set per route.
type fanoutState struct {
	routes, gateways int
	gen              int64 // the Gateways' generation and a header every route sets
	endpoints        []int // per endpoint set, how often its endpoints changed
}

func newFanoutState(routes, gateways int) *fanoutState {
	return &fanoutState{routes: routes, gateways: gateways, gen: 1, endpoints: make([]int, routes)}
}

// changeAll changes every resource: a new generation of every Gateway and
// route, and new endpoints in every set.
func (s *fanoutState) changeAll() {
	s.gen++
	for i := range s.endpoints {
		s.endpoints[i]++
	}
}

// changeOne changes one endpoint of one endpoint set.
func (s *fanoutState) changeOne(round int) { s.endpoints[(round*7919)%len(s.endpoints)]++ }

func (s *fanoutState) snapshot() *snapshot.Snapshot {
	snap := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
	for g := range s.gateways {
		ns := fmt.Sprintf("team-%02d", g)
		port := int32(10000 + g)
		snap.Listeners = append(snap.Listeners, snapshot.Listener{
			Name: "gateway/" + ns + "/gw/80", Port: port, ExternalPort: 80, Protocol: snapshot.ProtocolHTTP,
		})
		snap.Gateways = append(snap.Gateways, snapshot.GatewayRef{Namespace: ns, Name: "gw", Generation: s.gen, Ports: []int32{port}})
	}
	gen := strconv.FormatInt(s.gen, 10)
	for i := range s.routes {
		g := i % s.gateways
		ns := fmt.Sprintf("team-%02d", g)
		app := fmt.Sprintf("app-%04d", i)
		set := ns + "/" + app + ":80"
		l := &snap.Listeners[g]
		l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: app + "." + ns + ".example.com", Routes: []snapshot.Route{{
			ID:             "httproute/" + ns + "/" + app + ":0",
			Match:          snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}},
			RequestHeaders: &snapshot.HeaderModifier{Set: []snapshot.Header{{Name: "x-coxswain-generation", Value: gen}}},
			Backends:       []snapshot.Backend{{EndpointSet: set, Weight: 1}},
			Timeouts:       &snapshot.Timeouts{Request: snapshot.Duration(30 * time.Second)},
		}}})
		es := &snapshot.EndpointSet{Name: set}
		for j := range 3 {
			es.Endpoints = append(es.Endpoints, snapshot.Endpoint{
				Address: fmt.Sprintf("10.%d.%d.%d", i>>8&255, i&255, 1+(j+3*s.endpoints[i])%250), Port: 8080,
			})
		}
		snap.EndpointSets = append(snap.EndpointSets, es)
	}
	snapshot.Normalize(snap)
	return snap
}

// fanoutChild is the clients' process: commands go to its fd 3, reports
// ("<word> <its CPU µs>") come from its fd 4.
type fanoutChild struct {
	cmds    io.WriteCloser
	reports chan string
}

func startFanoutChild(t *testing.T, addr, dir string, n int) *fanoutChild {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	name, args := os.Args[0], []string{"-test.run=^TestFanoutClients$", "-test.timeout=0", "-fanout.gateways=" + strconv.Itoa(*fanoutGateways)}
	if *fanoutPin {
		name, args = "taskset", append([]string{"-c", "1", name}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), fanoutChildEnv+"=1", fanoutAddrEnv+"="+addr, fanoutDirEnv+"="+dir,
		fanoutClientsEnv+"="+strconv.Itoa(n), fanoutModeEnv+"="+*fanoutMode, fanoutProfileEnv+"="+*fanoutClientProfile)
	cmd.ExtraFiles = []*os.File{cmdR, repW}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = cmdR.Close()
	_ = repW.Close()
	c := &fanoutChild{cmds: cmdW, reports: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(repR)
		for sc.Scan() {
			c.reports <- sc.Text()
		}
		close(c.reports)
	}()
	t.Cleanup(func() {
		_ = cmdW.Close() // the child's clients stop at EOF
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the clients' process: %v", err)
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Error("the clients' process did not exit; killed it")
		}
	})
	return c
}

// command sends a command line and waits for the reply word.
func (c *fanoutChild) command(t *testing.T, cmd, reply string) time.Duration {
	t.Helper()
	if _, err := io.WriteString(c.cmds, cmd+"\n"); err != nil {
		t.Fatal(err)
	}
	return c.expect(t, reply)
}

// expect waits for the report word and returns the child's CPU time.
func (c *fanoutChild) expect(t *testing.T, word string) time.Duration {
	t.Helper()
	select {
	case line, ok := <-c.reports:
		if !ok {
			t.Fatalf("the clients' process exited while the benchmark waited for %q", word)
		}
		w, us, _ := strings.Cut(line, " ")
		v, err := strconv.ParseInt(us, 10, 64)
		if w != word || err != nil {
			t.Fatalf("the clients' process said %q, want %q <µs>", line, word)
		}
		return time.Duration(v) * time.Microsecond
	case <-time.After(fanoutWait):
		t.Fatalf("no %q from the clients' process within %s", word, fanoutWait)
		return 0
	}
}

// fanoutCounter tells the parent when every client has applied the
// target-th snapshot (the initial one is the first).
type fanoutCounter struct {
	target, remaining atomic.Int64
	done              chan struct{}
}

// applied records that one client has applied its k-th snapshot.
func (f *fanoutCounter) applied(k int64) {
	if k == f.target.Load() && f.remaining.Add(-1) == 0 {
		select {
		case f.done <- struct{}{}:
		default:
		}
	}
}

// TestFanoutClients is the clients' process of TestFanout: it connects the
// clients, reports "done" when all have applied the current snapshot and,
// on every "next" command, arms the count for the next one.
func TestFanoutClients(t *testing.T) {
	if os.Getenv(fanoutChildEnv) == "" {
		t.Skip("the fan-out benchmark's clients' process (TestFanout starts it)")
	}
	n, err := strconv.Atoi(os.Getenv(fanoutClientsEnv))
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q", fanoutClientsEnv, os.Getenv(fanoutClientsEnv))
	}
	addr, dir, mode := os.Getenv(fanoutAddrEnv), os.Getenv(fanoutDirEnv), os.Getenv(fanoutModeEnv)
	raiseFileLimit(t, uint64(n)+256)
	if path := os.Getenv(fanoutProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p := &pki{ca: fanoutCA(t, read("ca.pem"), read("ca-key.pem"))}
	bundle, err := x509bundle.Parse(td, read("bundle.pem"))
	if err != nil {
		t.Fatal(err)
	}
	serverID := mustID(t, installNS, names.ControllerServiceAccount)
	cmds := bufio.NewScanner(os.NewFile(3, "commands"))
	reports := os.NewFile(4, "reports")
	report := func(word string) {
		u, s := rusage()
		if _, err := fmt.Fprintf(reports, "%s %d\n", word, (u+s)/time.Microsecond); err != nil {
			t.Fatal(err)
		}
	}

	ctr := &fanoutCounter{done: make(chan struct{}, 1)}
	ctr.remaining.Store(int64(n))
	ctr.target.Store(1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i := range n {
		svid := p.svidFor(t, installNS, names.SharedProxyServiceAccount)
		node := fmt.Sprintf("fanout-%04d", i)
		switch mode {
		case "raw":
			wg.Go(func() { rawFanoutClient(ctx, t, addr, svid, bundle, serverID, node, ctr) })
		default:
			c := realFanoutClient(t, addr, dir, serverID, node, ctr)
			discovery.UseSVIDForTest(c, svid, bundle)
			wg.Go(func() { _ = c.Run(ctx) })
		}
	}
	for {
		select {
		case <-ctr.done:
		case <-time.After(fanoutWait):
			t.Fatalf("%d of %d clients did not apply snapshot %d within %s", ctr.remaining.Load(), n, ctr.target.Load(), fanoutWait)
		}
		report("done")
		if !cmds.Scan() {
			return // the benchmark is over
		}
		ctr.remaining.Store(int64(n))
		ctr.target.Add(1)
		report("ok")
	}
}

// realFanoutClient is a discovery.Client whose applier counts what it
// applies and binds (reports) every listener port. The client reassembles
// and validates each snapshot and checks its version before applying it.
func realFanoutClient(t *testing.T, addr, dir string, serverID spiffeid.ID, node string, ctr *fanoutCounter) *discovery.Client {
	t.Helper()
	c, err := discovery.NewClient(discovery.ClientOptions{
		Endpoints: []string{"https://" + addr},
		// Never used: the client is handed its SVID (UseSVIDForTest).
		BootstrapEndpoint: "https://" + addr,
		TokenPath:         filepath.Join(dir, "token"),
		TrustBundlePath:   filepath.Join(dir, "bundle.pem"),
		ServerID:          serverID,
		Scope:             snapshot.SharedPool(),
		NodeID:            node,
		Applier:           &fanoutApplier{ctr: ctr},
		Log:               logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fanoutApplier stands in for the proxy's data plane: it binds nothing,
// reports every listener port bound, and counts the snapshots applied.
type fanoutApplier struct {
	ctr     *fanoutCounter
	applied atomic.Int64
	mu      sync.Mutex
	bound   []int32
	cb      func([]int32)
}

func (a *fanoutApplier) Apply(s *snapshot.Snapshot) error {
	ports := make([]int32, 0, len(s.Listeners))
	for _, l := range s.Listeners {
		ports = append(ports, l.Port)
	}
	a.mu.Lock()
	changed := !slices.Equal(a.bound, ports)
	a.bound = ports
	cb := a.cb
	a.mu.Unlock()
	if changed && cb != nil {
		cb(ports)
	}
	a.ctr.applied(a.applied.Add(1))
	return nil
}

func (a *fanoutApplier) BoundPorts() []int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.bound)
}

func (a *fanoutApplier) OnBoundPortsChange(f func([]int32)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cb = f
}

// rawFanoutClient subscribes over mTLS with svid and acks every snapshot
// message as soon as gRPC has decoded it, without reassembling it: what
// the server alone costs, with clients that take no time.
func rawFanoutClient(ctx context.Context, t *testing.T, addr string, svid *x509svid.SVID, bundle *x509bundle.Bundle, serverID spiffeid.ID, node string, ctr *fanoutCounter) {
	tlsCfg := tlsconfig.MTLSClientConfig(svid, bundle, tlsconfig.AuthorizeID(serverID))
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(discovery.MaxServerMessageBytes)))
	if err != nil {
		t.Error(err)
		return
	}
	defer func() { _ = cc.Close() }()
	st, err := discoveryv1.NewDiscoveryClient(cc).Stream(ctx)
	if err != nil {
		t.Error(err)
		return
	}
	ports := make([]int32, *fanoutGateways)
	for g := range ports {
		ports[g] = int32(10000 + g)
	}
	sub := subscribe(node, snapshot.SharedPool())
	sub.GetSubscribe().Layout = discovery.LayoutToProto(discovery.RichestLayout) // as the real client asks
	if err := st.Send(sub); err != nil {
		t.Error(err)
		return
	}
	if err := st.Send(nodeStatus(ports...)); err != nil {
		t.Error(err)
		return
	}
	var k int64
	for {
		m, err := st.Recv()
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("%s: %v", node, err)
			}
			return
		}
		s := m.GetSnapshot()
		if s == nil {
			continue
		}
		if err := st.Send(ack(s)); err != nil {
			t.Errorf("%s: %v", node, err)
			return
		}
		k++
		ctr.applied(k)
	}
}
