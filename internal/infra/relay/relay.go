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

// Package relay is the infra relay: it takes its membership from the shard's
// Project list/watch (trust rule on), keeps the accepted trust in an atomic
// snapshot file that it loads on start, and runs an mTLS listener that
// accepts an agent certificate only when it chains to the agent CA of the
// project named in its SPIFFE ID and that project is in membership.
package relay

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"k8s.io/client-go/rest"

	"github.com/coxswain-go/coxswain/internal/infra/membership"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Config configures a Relay.
type Config struct {
	ShardID    string
	RESTConfig *rest.Config
	Keys       trust.KeySet
	// SnapshotPath is the snapshot file; it is loaded on start.
	SnapshotPath string
	// ServerCertificate is the relay's own TLS certificate.
	ServerCertificate tls.Certificate
	Log               logr.Logger
	Metrics           *membership.Metrics
	// Now is the clock of certificate verification and of the membership's
	// removal bookkeeping (nil: time.Now).
	Now func() time.Time
}

// Relay serves agents of the projects in its shard's membership.
type Relay struct {
	cfg        Config
	Membership *membership.Client
	dirty      chan struct{}
	mu         sync.Mutex
	writeErr   error
}

// New loads the snapshot file and builds the membership client seeded with it.
func New(cfg Config) (*Relay, error) {
	if cfg.Keys == nil {
		return nil, errors.New("the relay needs trust verification keys")
	}
	if cfg.SnapshotPath == "" {
		return nil, errors.New("the relay needs a snapshot file path")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	snap, ok, err := LoadSnapshot(cfg.SnapshotPath)
	if err != nil {
		return nil, err
	}
	if ok && snap.ShardID != cfg.ShardID {
		return nil, fmt.Errorf("relay snapshot %s belongs to shard %s, not %s", cfg.SnapshotPath, snap.ShardID, cfg.ShardID)
	}
	r := &Relay{cfg: cfg, dirty: make(chan struct{}, 1)}
	mc, err := membership.New(membership.Config{
		ShardID: cfg.ShardID, RESTConfig: cfg.RESTConfig, Keys: cfg.Keys, Seed: snap.Members(),
		Removed: snap.RemovedProjects, Now: cfg.Now,
		Log: cfg.Log.WithName("membership"), Metrics: cfg.Metrics,
		OnEvent: func(ev membership.Event) {
			if ev.Type != membership.TrustRefused {
				cfg.Log.Info("membership changed", "event", string(ev.Type), "project", ev.Name)
			}
			r.markDirty()
		},
		OnSynced: r.markDirty,
	})
	if err != nil {
		return nil, err
	}
	r.Membership = mc
	if ok {
		cfg.Log.Info("loaded relay snapshot", "path", cfg.SnapshotPath, "projects", len(mc.Members()))
	}
	return r, nil
}

func (r *Relay) markDirty() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

// WriteSnapshot writes the current membership to the snapshot file.
func (r *Relay) WriteSnapshot() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := WriteSnapshot(r.cfg.SnapshotPath, SnapshotOf(r.cfg.ShardID, r.Membership.Members(), r.Membership.Removals()))
	r.writeErr = err
	return err
}

// Run runs the membership client and keeps the snapshot file current until
// ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- r.Membership.Run(ctx) }()
	for {
		select {
		case <-ctx.Done():
			return <-done
		case <-r.dirty:
			if err := r.WriteSnapshot(); err != nil {
				r.cfg.Log.Error(err, "writing relay snapshot")
			}
		}
	}
}

// AgentIdentity is a verified agent.
type AgentIdentity struct {
	Project string `json:"project"`
	Agent   string `json:"agent"`
	ID      string `json:"spiffeID"`
}

// ParseAgentID extracts the project and agent from a certificate's single
// SPIFFE URI SAN spiffe://<project-uuid>/agent/<id>.
func ParseAgentID(cert *x509.Certificate) (AgentIdentity, error) {
	var ids []spiffeid.ID
	for _, u := range cert.URIs {
		if u.Scheme != "spiffe" {
			continue
		}
		id, err := spiffeid.FromURI(u)
		if err != nil {
			return AgentIdentity{}, fmt.Errorf("agent certificate: bad SPIFFE ID %q: %w", u.String(), err)
		}
		ids = append(ids, id)
	}
	if len(ids) != 1 {
		return AgentIdentity{}, fmt.Errorf("agent certificate must carry exactly one SPIFFE URI SAN, has %d", len(ids))
	}
	id := ids[0]
	project := id.TrustDomain().Name()
	if !uuidRE.MatchString(project) {
		return AgentIdentity{}, fmt.Errorf("agent certificate: trust domain %q is not a project UUID", project)
	}
	agent, ok := strings.CutPrefix(id.Path(), "/agent/")
	if !ok || agent == "" || strings.Contains(agent, "/") {
		return AgentIdentity{}, fmt.Errorf("agent certificate: SPIFFE ID %s is not spiffe://<project>/agent/<id>", id)
	}
	return AgentIdentity{Project: project, Agent: agent, ID: id.String()}, nil
}

// VerifyAgent checks a client certificate chain (leaf first): the project it
// names must be in membership, and the leaf must chain, for client auth, to
// that project's accepted agentCA.certificates (during a rotation those hold
// the current and the next CA, so both chain).
func (r *Relay) VerifyAgent(rawCerts [][]byte) (AgentIdentity, error) {
	certs := make([]*x509.Certificate, 0, len(rawCerts))
	for _, raw := range rawCerts {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return AgentIdentity{}, fmt.Errorf("agent certificate: %w", err)
		}
		certs = append(certs, c)
	}
	return r.VerifyAgentChain(certs)
}

// VerifyAgentChain is VerifyAgent for parsed certificates (leaf first), as
// crypto/tls and net/http hand them over.
func (r *Relay) VerifyAgentChain(certs []*x509.Certificate) (AgentIdentity, error) {
	if len(certs) == 0 {
		return AgentIdentity{}, errors.New("no agent certificate")
	}
	id, err := ParseAgentID(certs[0])
	if err != nil {
		return AgentIdentity{}, err
	}
	m, ok := r.Membership.Get(id.Project)
	if !ok {
		return AgentIdentity{}, fmt.Errorf("agent %s: project %s is not in this shard's membership", id.ID, id.Project)
	}
	if m.Certificates == "" {
		return AgentIdentity{}, fmt.Errorf("agent %s: project %s has no agent CA", id.ID, id.Project)
	}
	// Membership only admits certificates that parse; parse strictly anyway
	// so that a bad block can never shrink the roots silently.
	cas, err := trust.ParseAgentCA(m.Certificates)
	if err != nil {
		return AgentIdentity{}, fmt.Errorf("agent %s: project %s: %w", id.ID, id.Project, err)
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: r.cfg.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return AgentIdentity{}, fmt.Errorf("agent %s: certificate does not chain to the agent CA of project %s: %w", id.ID, id.Project, err)
	}
	return id, nil
}

// TLSConfig is the agent listener's TLS configuration.
//
// The agent check runs in VerifyConnection, not VerifyPeerCertificate:
// crypto/tls skips VerifyPeerCertificate when a client resumes a session
// (TLS 1.2 session tickets and TLS 1.3 PSKs alike) but calls
// VerifyConnection on every handshake, resumed or not, with the peer
// certificates restored from the session. Verifying there means an agent
// whose project left the membership, or whose CA was dropped by
// `rotate-ca finish`, is refused on its next connection instead of for the
// lifetime of its session ticket, while resumption keeps its cost benefit
// for agents that are still trusted.
func (r *Relay) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS12,
		Certificates:     []tls.Certificate{r.cfg.ServerCertificate},
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: r.verifyConnection,
	}
}

func (r *Relay) verifyConnection(cs tls.ConnectionState) error {
	_, err := r.VerifyAgentChain(cs.PeerCertificates)
	if err != nil {
		r.cfg.Log.Info("refused agent certificate", "resumed", cs.DidResume, "error", err.Error())
	}
	return err
}

// Handler serves verified agents. GET /v1/agent/identity answers with the
// agent's identity.
func (r *Relay) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/agent/identity", func(w http.ResponseWriter, req *http.Request) {
		if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
			http.Error(w, "client certificate required", http.StatusUnauthorized)
			return
		}
		// A kept-alive connection outlives membership changes: verify the
		// agent again on every request, not only at the handshake.
		id, err := r.VerifyAgentChain(req.TLS.PeerCertificates)
		if err != nil {
			r.cfg.Log.Info("refused agent request", "error", err.Error())
			http.Error(w, "agent certificate not accepted", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(id)
	})
	return mux
}

// Serve runs the agent mTLS listener on l until ctx ends.
func (r *Relay) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: r.Handler(), TLSConfig: r.TLSConfig(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: nil}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(l, "", "") }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
