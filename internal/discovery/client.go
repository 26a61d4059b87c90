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

package discovery

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Applier is the proxy's data plane as the discovery client sees it
// (*proxy.DataPlane implements it).
type Applier interface {
	// Apply swaps in a validated snapshot atomically; on error the previous
	// snapshot stays in force.
	Apply(*snapshot.Snapshot) error
	// BoundPorts is the set of ports actually bound now.
	BoundPorts() []int32
	// OnBoundPortsChange registers a callback for every change of the set.
	OnBoundPortsChange(func([]int32))
}

// Readiness receives the client's view of readiness (*proxy.Readiness
// implements it).
type Readiness interface {
	Ready()
	NotReady(reason string)
}

// Degradable is implemented by readiness sinks that can report "ready but
// degraded" (200 with a note); the client uses it while it is disconnected
// but still serves its last good snapshot.
type Degradable interface {
	Degraded(note string)
}

// ErrWireVersion means the controller speaks another wire version; the
// client stops for good.
var ErrWireVersion = errors.New("discovery: " + WireMismatchMessage)

// ClientOptions configures a proxy's discovery client.
type ClientOptions struct {
	// Endpoints are the stream endpoints, https://host:port, tried in turn.
	Endpoints []string
	// BootstrapEndpoint is https://host:port of the bootstrap service.
	BootstrapEndpoint string
	// TokenPath is the projected ServiceAccount token (audience
	// coxswain-discovery); it is re-read on every bootstrap.
	TokenPath string
	// TrustBundlePath holds the PEM roots of the discovery CA.
	TrustBundlePath string
	// ServerID is the controller's SPIFFE ID, expected on both endpoints.
	ServerID spiffeid.ID
	// Scope is what this proxy subscribes to.
	Scope snapshot.Scope
	// NodeID names this proxy (its pod name).
	NodeID string
	// Applier applies snapshots.
	Applier Applier
	// Readiness is told when the proxy has a snapshot (optional).
	Readiness Readiness
	// Registerer receives the coxswain_proxy_discovery_* metrics (optional).
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// Client is the proxy side of discovery: it bootstraps an SVID, holds the
// stream to the leader, applies snapshots atomically and acks or nacks them,
// reports bound ports, and reconnects with backoff. Routing is never cleared
// on disconnect.
type Client struct {
	opts      ClientOptions
	log       logr.Logger
	key       crypto.Signer
	endpoints []string
	bootstrap string
	metrics   *clientMetrics

	mu        sync.Mutex
	svid      *x509svid.SVID
	bundle    *x509bundle.Bundle
	renewAt   time.Time
	resources map[string][]byte // applied state, by key
	version   string
	connected bool

	portsChanged chan struct{}
}

// NewClient checks the options and creates the proxy's key pair (kept in
// memory only, for the client's lifetime).
func NewClient(opts ClientOptions) (*Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("--discovery-endpoint is required")
	}
	if opts.Applier == nil {
		return nil, errors.New("discovery client needs an applier")
	}
	if opts.ServerID.IsZero() {
		return nil, errors.New("discovery client needs the controller's SPIFFE ID")
	}
	if opts.NodeID == "" {
		return nil, errors.New("discovery client needs a node ID")
	}
	if opts.TokenPath == "" || opts.TrustBundlePath == "" || opts.BootstrapEndpoint == "" {
		return nil, errors.New("discovery client needs a token path, a trust bundle path and a bootstrap endpoint")
	}
	c := &Client{opts: opts, log: opts.Log, portsChanged: make(chan struct{}, 1)}
	for _, e := range opts.Endpoints {
		hp, err := hostPort(e)
		if err != nil {
			return nil, fmt.Errorf("--discovery-endpoint: %w", err)
		}
		c.endpoints = append(c.endpoints, hp)
	}
	hp, err := hostPort(opts.BootstrapEndpoint)
	if err != nil {
		return nil, fmt.Errorf("--discovery-bootstrap-endpoint: %w", err)
	}
	c.bootstrap = hp
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c.key = key
	c.metrics = newClientMetrics()
	if opts.Registerer != nil {
		if err := c.metrics.register(opts.Registerer, c); err != nil {
			return nil, err
		}
	}
	opts.Applier.OnBoundPortsChange(func([]int32) { signal(c.portsChanged) })
	return c, nil
}

// ParseEndpoints splits a comma-separated --discovery-endpoint value.
func ParseEndpoints(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func hostPort(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if u.Scheme != "https" {
		return "", fmt.Errorf("endpoint %q must be https://host:port (discovery is always TLS)", endpoint)
	}
	if u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("endpoint %q must be https://host:port", endpoint)
	}
	return u.Host, nil
}

// Version is the version of the applied snapshot ("" before the first).
func (c *Client) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Connected reports whether a stream is open and has delivered a snapshot.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

// GetX509SVID implements x509svid.Source with the current SVID.
func (c *Client) GetX509SVID() (*x509svid.SVID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.svid == nil {
		return nil, errors.New("no SVID yet")
	}
	return c.svid, nil
}

// GetX509BundleForTrustDomain implements x509bundle.Source: the roots from
// the trust bundle file plus those the controller returned at bootstrap.
func (c *Client) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bundle == nil || td != c.bundle.TrustDomain() {
		return nil, fmt.Errorf("no trust bundle for %q", td)
	}
	return c.bundle, nil
}

func (c *Client) loadBundleFile() (*x509bundle.Bundle, error) {
	b, err := x509bundle.Load(c.opts.ServerID.TrustDomain(), c.opts.TrustBundlePath)
	if err != nil {
		return nil, fmt.Errorf("trust bundle %s: %w", c.opts.TrustBundlePath, err)
	}
	return b, nil
}

func (c *Client) setReadiness(connected bool, note string) {
	r := c.opts.Readiness
	c.mu.Lock()
	has := c.version != ""
	c.connected = connected
	c.mu.Unlock()
	c.metrics.connected.Set(b2f(connected))
	if r == nil {
		return
	}
	switch {
	case !has:
		r.NotReady("waiting for the first routing snapshot from discovery")
	case connected:
		r.Ready()
	default:
		if d, ok := r.(Degradable); ok {
			d.Degraded("disconnected from discovery, serving the last good snapshot: " + note)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Run bootstraps and streams until ctx ends (nil) or the controller speaks
// another wire version (ErrWireVersion).
func (c *Client) Run(ctx context.Context) error {
	c.setReadiness(false, "")
	bo := &backoff{}
	failures := 0 // consecutive failed dials since the last bootstrap
	next := 0     // endpoint index
	for ctx.Err() == nil {
		c.mu.Lock()
		needBootstrap := c.svid == nil || !time.Now().Before(c.renewAt) || failures >= 3
		c.mu.Unlock()
		if needBootstrap {
			if err := c.doBootstrap(ctx); err != nil {
				if errors.Is(err, ErrWireVersion) {
					return err
				}
				c.log.Error(err, "bootstrap failed")
				c.metrics.bootstrapFailures.Inc()
				if !c.postponeRenewal() {
					if !sleep(ctx, bo.next(c.Version() != "")) {
						break
					}
					continue
				}
				// The current SVID is still valid: keep streaming with it
				// and try to renew again later.
			}
			failures = 0
		}
		endpoint := c.endpoints[next%len(c.endpoints)]
		got, err := c.stream(ctx, endpoint)
		if ctx.Err() != nil {
			break
		}
		if got {
			bo.reset()
			failures = 0
		}
		if errors.Is(err, errRenew) {
			continue // SVID half-life: re-bootstrap and reconnect at once
		}
		c.setReadiness(false, errString(err))
		var wait time.Duration
		switch {
		case errors.Is(err, ErrWireVersion):
			c.log.Error(err, "stopping: the controller speaks another wire version")
			return err
		case isNotLeader(err):
			next++ // try the next endpoint; the Service converges on the leader
			wait = bo.notLeader()
		default:
			bo.notLeaderN = 0
			if code := status.Code(err); code == codes.Unavailable || code == codes.Unauthenticated || code == codes.DeadlineExceeded {
				failures++
			}
			next++
			wait = bo.next(c.Version() != "")
		}
		c.metrics.reconnects.Inc()
		c.log.V(1).Info("discovery stream ended; retrying", "endpoint", endpoint, "err", errString(err), "wait", wait.String())
		if !sleep(ctx, wait) {
			break
		}
	}
	return nil
}

// postponeRenewal moves the renewal a quarter of the remaining lifetime
// ahead (at least 1s) when the current SVID is still valid, and reports
// whether it did.
func (c *Client) postponeRenewal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.svid == nil {
		return false
	}
	now := time.Now()
	left := c.svid.Certificates[0].NotAfter.Sub(now)
	if left < 2*time.Second {
		return false
	}
	c.renewAt = now.Add(max(left/4, time.Second))
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var errRenew = errors.New("SVID reached half of its lifetime")

func isNotLeader(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), NotLeaderMessage)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff is jittered exponential from 250ms to 30s (4s once the proxy holds
// a snapshot), and a fast 250–500ms retry for "not the leader", widening to
// 0.5–2s after 20 of them in a row.
type backoff struct {
	attempt    int
	notLeaderN int
}

func (b *backoff) reset() { b.attempt, b.notLeaderN = 0, 0 }

func (b *backoff) next(holdsSnapshot bool) time.Duration {
	maxD := 30 * time.Second
	if holdsSnapshot {
		maxD = 4 * time.Second
	}
	d := 250 * time.Millisecond << min(b.attempt, 10)
	if d > maxD {
		d = maxD
	}
	b.attempt++
	// Full jitter over [d/2, d].
	return d/2 + randDuration(d/2)
}

func (b *backoff) notLeader() time.Duration {
	b.notLeaderN++
	if b.notLeaderN > 20 {
		return 500*time.Millisecond + randDuration(1500*time.Millisecond)
	}
	return 250*time.Millisecond + randDuration(250*time.Millisecond)
}

func randDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(d)))
	if err != nil {
		return d / 2
	}
	return time.Duration(n.Int64())
}

// doBootstrap exchanges the token and a CSR for an SVID over server-auth TLS.
func (c *Client) doBootstrap(ctx context.Context) error {
	fileBundle, err := c.loadBundleFile()
	if err != nil {
		return err
	}
	token, err := os.ReadFile(c.opts.TokenPath)
	if err != nil {
		return fmt.Errorf("reading the ServiceAccount token: %w", err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, c.key)
	if err != nil {
		return err
	}
	tlsCfg := tlsconfig.TLSClientConfig(fileBundle, tlsconfig.AuthorizeID(c.opts.ServerID))
	cc, err := grpc.NewClient(c.bootstrap, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxClientMessageBytes), grpc.MaxCallSendMsgSize(MaxClientMessageBytes)))
	if err != nil {
		return err
	}
	defer func() { _ = cc.Close() }()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := discoveryv1.NewDiscoveryClient(cc).Bootstrap(cctx, &discoveryv1.BootstrapRequest{
		SaToken:     strings.TrimSpace(string(token)),
		CsrPem:      string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})),
		WireVersion: WireVersion,
		Scope:       ScopeToProto(c.opts.Scope),
	})
	if err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), WireMismatchMessage) {
			return fmt.Errorf("%w (the server said: %s)", ErrWireVersion, st.Message())
		}
		return fmt.Errorf("bootstrap at %s: %w", c.bootstrap, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		return err
	}
	svid, err := x509svid.Parse([]byte(resp.GetSvidCertPem()), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return fmt.Errorf("bootstrap returned an unusable SVID: %w", err)
	}
	bundle := fileBundle.Clone()
	if extra, err := x509bundle.Parse(bundle.TrustDomain(), []byte(resp.GetTrustBundlePem())); err == nil {
		for _, a := range extra.X509Authorities() {
			bundle.AddX509Authority(a)
		}
	}
	if _, _, err := x509svid.Verify(svid.Certificates, bundle); err != nil {
		return fmt.Errorf("bootstrap returned an SVID that does not chain to the trust bundle: %w", err)
	}
	leaf := svid.Certificates[0]
	c.mu.Lock()
	c.svid, c.bundle = svid, bundle
	// Renew at half of the remaining lifetime (NotBefore is backdated for
	// clock skew, so it does not count).
	now := time.Now()
	c.renewAt = now.Add(leaf.NotAfter.Sub(now) / 2)
	c.mu.Unlock()
	c.metrics.svidExpiry.Set(float64(leaf.NotAfter.Unix()))
	c.log.Info("bootstrapped SVID", "id", svid.ID.String(), "notAfter", leaf.NotAfter, "renewAt", c.renewAt)
	return nil
}

// stream runs one stream until it fails or the SVID needs renewal; got says
// whether it delivered at least one snapshot message.
func (c *Client) stream(ctx context.Context, endpoint string) (got bool, err error) {
	c.mu.Lock()
	renewAt := c.renewAt
	c.mu.Unlock()
	tlsCfg := tlsconfig.MTLSClientConfig(c, c, tlsconfig.AuthorizeID(c.opts.ServerID))
	cc, err := grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxServerMessageBytes), grpc.MaxCallSendMsgSize(MaxClientMessageBytes)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
	)
	if err != nil {
		return false, err
	}
	defer func() { _ = cc.Close() }()
	sctx, cancel := context.WithDeadlineCause(ctx, renewAt, errRenew)
	defer cancel()
	st, err := discoveryv1.NewDiscoveryClient(cc).Stream(sctx)
	if err != nil {
		return false, err
	}
	var sendMu sync.Mutex
	send := func(m *discoveryv1.ClientMessage) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return st.Send(m)
	}
	if err := send(&discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Subscribe{Subscribe: &discoveryv1.Subscribe{
		NodeId: c.opts.NodeID, WireVersion: WireVersion, Scope: ScopeToProto(c.opts.Scope),
	}}}); err != nil {
		return false, c.streamErr(sctx, st, err)
	}
	sendPorts := func() error {
		ports := slices.Clone(c.opts.Applier.BoundPorts())
		slices.Sort(ports)
		return send(&discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_NodeStatus{NodeStatus: &discoveryv1.NodeStatus{BoundPorts: ports}}})
	}
	if err := sendPorts(); err != nil {
		return false, c.streamErr(sctx, st, err)
	}
	// Bound-port reports on every change, for the stream's lifetime.
	portsDone := make(chan struct{})
	defer func() { cancel(); <-portsDone }()
	go func() {
		defer close(portsDone)
		for {
			select {
			case <-sctx.Done():
				return
			case <-c.portsChanged:
				if err := sendPorts(); err != nil {
					return
				}
			}
		}
	}()
	for {
		m, err := st.Recv()
		if err != nil {
			return got, c.streamErr(sctx, st, err)
		}
		snap := m.GetSnapshot()
		if snap == nil {
			continue
		}
		if !got {
			got = true
			c.setReadiness(true, "")
		}
		reply := c.handle(snap)
		if err := send(reply); err != nil {
			return got, c.streamErr(sctx, st, err)
		}
		c.setReadiness(true, "")
	}
}

func (c *Client) streamErr(ctx context.Context, _ grpc.BidiStreamingClient[discoveryv1.ClientMessage, discoveryv1.ServerMessage], err error) error {
	if errors.Is(context.Cause(ctx), errRenew) {
		return errRenew
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), WireMismatchMessage) {
		return fmt.Errorf("%w (the server said: %s)", ErrWireVersion, st.Message())
	}
	return err
}

// maxNackDetail keeps a Nack well below the client→server message cap.
const maxNackDetail = 16 << 10

// handle applies one snapshot message atomically and returns the Ack or
// Nack to send. Any failure keeps the last good state.
func (c *Client) handle(m *discoveryv1.Snapshot) *discoveryv1.ClientMessage {
	applied, err := c.apply(m)
	if err != nil {
		c.metrics.nacks.Inc()
		c.log.Error(err, "rejected a discovery snapshot; keeping the last good one", "version", m.GetVersion(), "full", m.GetFull())
		detail := err.Error()
		if len(detail) > maxNackDetail {
			detail = detail[:maxNackDetail]
		}
		return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Nack{Nack: &discoveryv1.Nack{Version: m.GetVersion(), Nonce: m.GetNonce(), Detail: detail}}}
	}
	if applied {
		c.metrics.applied.Inc()
	}
	return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Ack{Ack: &discoveryv1.Ack{Version: m.GetVersion(), Nonce: m.GetNonce()}}}
}

func (c *Client) apply(m *discoveryv1.Snapshot) (applied bool, err error) {
	c.mu.Lock()
	cur, curVersion := c.resources, c.version
	c.mu.Unlock()
	next := map[string][]byte{}
	if !m.GetFull() {
		if cur == nil {
			return false, errors.New("delta received without a baseline")
		}
		for k, v := range cur {
			next[k] = v
		}
	}
	for _, r := range m.GetResources() {
		if r.GetKey() == "" {
			return false, errors.New("resource with an empty key")
		}
		next[r.GetKey()] = r.GetBody()
	}
	for _, k := range m.GetRemoved() {
		if m.GetFull() {
			return false, errors.New("a full snapshot cannot remove resources")
		}
		delete(next, k)
	}
	keys := make([]string, 0, len(next))
	for k := range next {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	res := make([]snapshot.Resource, 0, len(keys))
	for _, k := range keys {
		res = append(res, snapshot.Resource{Key: k, Body: next[k]})
	}
	snap, err := snapshot.Assemble(c.opts.Scope, res)
	if err != nil {
		return false, err
	}
	version, err := snapshot.Version(snap)
	if err != nil {
		return false, err
	}
	if version != m.GetVersion() {
		return false, fmt.Errorf("version mismatch: the server says %s, the reassembled snapshot is %s", m.GetVersion(), version)
	}
	if version != curVersion {
		if err := c.opts.Applier.Apply(snap); err != nil {
			return false, fmt.Errorf("apply: %w", err)
		}
		applied = true
	}
	c.mu.Lock()
	c.resources, c.version = next, version
	c.mu.Unlock()
	return applied, nil
}

type clientMetrics struct {
	connected         prometheus.Gauge
	applied           prometheus.Counter
	nacks             prometheus.Counter
	reconnects        prometheus.Counter
	bootstrapFailures prometheus.Counter
	svidExpiry        prometheus.Gauge
}

func newClientMetrics() *clientMetrics {
	return &clientMetrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coxswain_proxy_discovery_connected",
			Help: "1 while the discovery stream is open and delivering snapshots.",
		}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_snapshots_applied_total",
			Help: "Routing snapshots applied.",
		}),
		nacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_nacks_total",
			Help: "Routing snapshots rejected (the last good one stays in force).",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_reconnects_total",
			Help: "Discovery streams that ended and were retried.",
		}),
		bootstrapFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_bootstrap_failures_total",
			Help: "Failed SVID bootstraps.",
		}),
		svidExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coxswain_proxy_discovery_svid_expiry_seconds",
			Help: "Unix time at which the current SVID expires.",
		}),
	}
}

func (m *clientMetrics) register(r prometheus.Registerer, _ *Client) error {
	for _, col := range []prometheus.Collector{m.connected, m.applied, m.nacks, m.reconnects, m.bootstrapFailures, m.svidExpiry} {
		if err := r.Register(col); err != nil {
			return err
		}
	}
	return nil
}
