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

// Package membership is the Project list/watch every shard service uses to
// learn which projects its shard serves. It lists, then watches, the Projects
// labelled with the shard; it re-checks spec.shardID; it applies the trust
// rule to signed fields; and it never shrinks membership on a transport
// failure: the last known set stays until a successful relist, diffed
// against it, says otherwise.
//
// Where things live: membership.go holds the Client, its Config and what
// consumers read (Members, Get, Ready); reflector.go runs client-go's
// Reflector against the infra-apiserver and counts its failures; store.go is
// the store the Reflector writes to, where a complete list is diffed against
// the membership; observe.go holds the trust handlers every observed Project
// goes through and the events they emit; removals.go remembers the newest
// accepted signature of removed Projects; options.go and metrics.go are the
// flags and Prometheus metrics of shard services.
package membership

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

// Member is what a shard service knows of one Project. The signed fields
// (APIServerEndpoint, Certificates, RelayRoots) are the last accepted ones.
type Member struct {
	Name              string                        `json:"name"`
	ShardID           string                        `json:"shardID"`
	APIServerEndpoint string                        `json:"apiServerEndpoint"`
	Certificates      string                        `json:"certificates,omitempty"`
	RelayRoots        string                        `json:"relayRoots,omitempty"`
	TrustSignature    *infrav1alpha1.TrustSignature `json:"trustSignature,omitempty"`
	// Ready is the health observation; it never changes membership and
	// never produces an event.
	Ready metav1.ConditionStatus `json:"-"`
}

func (m Member) fields() trust.Fields {
	return trust.Fields{Name: m.Name, APIServerEndpoint: m.APIServerEndpoint, Certificates: m.Certificates, RelayRoots: m.RelayRoots}
}

// EventType names a membership change.
type EventType string

const (
	// Added means the Project joined the membership.
	Added EventType = "Added"
	// Removed means the Project was deleted (or no longer belongs to the
	// shard).
	Removed EventType = "Removed"
	// EndpointChanged means the Project's endpoint changed; consumers
	// reconnect to the new one.
	EndpointChanged EventType = "EndpointChanged"
	// TrustChanged means agentCA.certificates or relayRoots changed;
	// consumers update trust without reconnecting.
	TrustChanged EventType = "TrustChanged"
	// TrustRefused means a change of signed fields was refused; the last
	// accepted values are kept.
	TrustRefused EventType = "TrustRefused"
)

// Event is one membership change. Member is the state after the change (the
// last state for Removed); Previous is the state before it, when there was one.
type Event struct {
	Type     EventType
	Name     string
	Member   Member
	Previous *Member
	// Err is the refusal reason of TrustRefused.
	Err error
}

// Config configures a Client.
type Config struct {
	ShardID    string
	RESTConfig *rest.Config
	// Keys verify trust signatures. Nil disables the trust rule (signed
	// fields are taken as they come); shard services that hand out trust
	// (the relay) must set it.
	Keys trust.KeySet
	// Seed is the membership to start from (for example the relay's
	// snapshot file). It is served before the first list but does not make
	// the client ready; the first list is diffed against it.
	Seed []Member
	// OnEvent receives every change, in order, from one goroutine.
	OnEvent func(Event)
	// OnSynced is called after every successful list, once its diff has
	// been delivered to OnEvent.
	OnSynced func()
	Log      logr.Logger
	Metrics  *Metrics
	// MinBackoff and MaxBackoff bound the Reflector's wait before it lists
	// or watches again: it starts at MinBackoff and doubles up to MaxBackoff
	// while attempts keep ending, and starts over after two quiet minutes.
	MinBackoff, MaxBackoff time.Duration
	// Removed seeds the remembered removals (for example from the relay's
	// snapshot file); see Removal.
	Removed []Removal
	// RemovalRetention and MaxRemovals bound the remembered removals
	// (defaults DefaultRemovalRetention and DefaultMaxRemovals).
	RemovalRetention time.Duration
	MaxRemovals      int
	// Now is the clock of removal bookkeeping (nil: time.Now).
	Now func() time.Time
}

// Client maintains the membership of one shard.
type Client struct {
	cfg Config
	// source lists and watches the shard's Projects (reflector.go).
	source  cache.ListerWatcherWithContext
	mu      sync.RWMutex
	members map[string]Member
	ready   bool
	// refused remembers the generation of the last refused change per
	// Project, so that status-only updates of a refused object are not
	// reported again.
	refused map[string]int64
	// removals remembers the newest accepted signedAt of removed Projects.
	removals map[string]Removal
}

// New creates a Client; Run starts it.
func New(cfg Config) (*Client, error) {
	if !uuidRE.MatchString(cfg.ShardID) {
		return nil, fmt.Errorf("shard ID must be a lowercase UUID, got %q", cfg.ShardID)
	}
	if cfg.RESTConfig == nil {
		return nil, errors.New("membership client needs a REST config")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 200 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.RemovalRetention <= 0 {
		cfg.RemovalRetention = DefaultRemovalRetention
	}
	if cfg.MaxRemovals <= 0 {
		cfg.MaxRemovals = DefaultMaxRemovals
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	source, err := projectSource(cfg.RESTConfig, cfg.ShardID)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, source: source, members: map[string]Member{}, refused: map[string]int64{}, removals: map[string]Removal{}}
	for _, r := range cfg.Removed {
		r.SignedAt, r.RemovedAt = r.SignedAt.UTC(), r.RemovedAt.UTC()
		c.removals[r.Name] = r
	}
	c.pruneRemovalsLocked()
	for _, m := range cfg.Seed {
		if err := c.seedable(m); err != nil {
			cfg.Log.Info("ignoring seeded project", "project", m.Name, "error", err.Error())
			continue
		}
		c.members[m.Name] = m
	}
	cfg.Metrics.Members.Set(float64(len(c.members)))
	return c, nil
}

// Ready reports whether the first list succeeded.
func (c *Client) Ready() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// ReadyzCheck is a readiness check (controller-runtime healthz.Checker
// shape): an error until the first list succeeded.
func (c *Client) ReadyzCheck(*http.Request) error {
	if !c.Ready() {
		return errors.New("project membership: first list has not succeeded yet")
	}
	return nil
}

// Members returns the membership, sorted by name.
func (c *Client) Members() []Member {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Member, 0, len(c.members))
	for _, m := range c.members {
		out = append(out, copyMember(m))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns one member.
func (c *Client) Get(name string) (Member, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m, ok := c.members[name]
	return copyMember(m), ok
}

func copyMember(m Member) Member {
	if m.TrustSignature != nil {
		m.TrustSignature = m.TrustSignature.DeepCopy()
	}
	return m
}
