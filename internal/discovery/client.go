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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

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

// VersionedApplier is an Applier that also takes a snapshot with the
// version the client computed while reassembling and validating it, and
// so need not validate or encode it again; the client uses it when the
// Applier has it.
type VersionedApplier interface {
	ApplyVersioned(s *snapshot.Snapshot, version string) error
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

// ErrWireVersion means the controller speaks another wire version. The
// client does not stop: it keeps serving its last good snapshot, reports
// itself degraded and asks again every WireMismatchRetry, because the
// mismatch ends when either side is upgraded or rolled back.
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
	// WireMismatchRetry is how often a client the controller refused for
	// its wire version asks again (default 30s).
	WireMismatchRetry time.Duration
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

	mu sync.Mutex
	// The SVID source (client_bootstrap.go).
	svid    *x509svid.SVID
	bundle  *x509bundle.Bundle
	renewAt time.Time
	// The applied state (client_apply.go).
	resources []snapshot.Resource // in key order, one per key; nil in a layout PerHost, whose assembler holds them
	version   string
	assembler *snapshot.Assembler // of the layout resources are in
	connected bool

	// portsChanged wakes the bound-port reporter (client_stream.go).
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
	if opts.WireMismatchRetry <= 0 {
		opts.WireMismatchRetry = 30 * time.Second
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
		return nil, fmt.Errorf("generating the proxy key: %w", err)
	}
	c.key = key
	c.metrics = newClientMetrics()
	if opts.Registerer != nil {
		if err := c.metrics.register(opts.Registerer); err != nil {
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

// hostPort is the host:port of an https://host:port endpoint.
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

// setReadiness records whether a stream is delivering and tells the
// readiness sink: not ready before the first snapshot, ready while
// connected, degraded (still serving the last good snapshot) otherwise.
func (c *Client) setReadiness(connected bool, note string) {
	r := c.opts.Readiness
	c.mu.Lock()
	has := c.version != ""
	c.connected = connected
	c.mu.Unlock()
	c.metrics.connected.Set(b2f(connected))
	if connected {
		c.metrics.wireMismatch.Set(0) // the controller accepted this wire version
	}
	if r == nil {
		return
	}
	switch {
	case !has && note != "":
		r.NotReady("waiting for the first routing snapshot from discovery: " + note)
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
