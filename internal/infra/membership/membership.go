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
package membership

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// Added: the Project joined the membership.
	Added EventType = "Added"
	// Removed: the Project was deleted (or no longer belongs to the shard).
	Removed EventType = "Removed"
	// EndpointChanged: consumers reconnect to the new endpoint.
	EndpointChanged EventType = "EndpointChanged"
	// TrustChanged: agentCA.certificates or relayRoots changed; consumers
	// update trust without reconnecting.
	TrustChanged EventType = "TrustChanged"
	// TrustRefused: a change of signed fields was refused; the last accepted
	// values are kept.
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
	// MinBackoff and MaxBackoff bound the wait between failed attempts.
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
	cfg     Config
	kube    client.WithWatch
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
	scheme := runtime.NewScheme()
	if err := infrav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	kube, err := client.NewWithWatch(cfg.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("infra-apiserver client: %w", err)
	}
	c := &Client{cfg: cfg, kube: kube, members: map[string]Member{}, refused: map[string]int64{}, removals: map[string]Removal{}}
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

// Run lists, then watches, until ctx ends. It returns nil on cancellation.
func (c *Client) Run(ctx context.Context) error {
	backoff := c.cfg.MinBackoff
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, c.cfg.MaxBackoff)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	needList := true
	rv := ""
	for ctx.Err() == nil {
		if needList {
			var err error
			rv, err = c.relist(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				c.cfg.Metrics.ListErrors.Inc()
				c.cfg.Log.Info("listing projects failed; keeping the last known membership", "error", err.Error())
				if !wait() {
					return nil
				}
				continue
			}
			needList = false
			backoff = c.cfg.MinBackoff
		}
		w, err := c.kube.Watch(ctx, &infrav1alpha1.ProjectList{}, c.selector(), &client.ListOptions{Raw: &metav1.ListOptions{
			ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: ptr(int64(300 + time.Now().UnixNano()%300)),
		}})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.cfg.Metrics.WatchErrors.Inc()
			c.cfg.Log.Info("watching projects failed; will relist, keeping the last known membership", "error", err.Error())
			needList = true
			if !wait() {
				return nil
			}
			continue
		}
		var ok bool
		rv, ok = c.consume(ctx, w, rv)
		w.Stop()
		if !ok {
			c.cfg.Metrics.WatchErrors.Inc()
			needList = true
			if !wait() {
				return nil
			}
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func (c *Client) selector() client.MatchingLabels {
	return client.MatchingLabels{infrav1alpha1.ShardIDLabel: c.cfg.ShardID}
}

// relist lists the shard's Projects and diffs the result against the
// membership. Nothing changes when the list fails.
func (c *Client) relist(ctx context.Context) (string, error) {
	var list infrav1alpha1.ProjectList
	if err := c.kube.List(ctx, &list, c.selector()); err != nil {
		return "", err
	}
	seen := map[string]bool{}
	for i := range list.Items {
		if c.observe(&list.Items[i]) {
			seen[list.Items[i].Name] = true
		}
	}
	c.mu.Lock()
	var gone []Member
	for name, m := range c.members {
		if !seen[name] {
			gone = append(gone, m)
			delete(c.members, name)
			delete(c.refused, name)
			c.rememberRemovalLocked(m)
		}
	}
	c.pruneRemovalsLocked()
	first := !c.ready
	c.ready = true
	c.cfg.Metrics.Members.Set(float64(len(c.members)))
	c.mu.Unlock()
	c.cfg.Metrics.Ready.Set(1)
	sort.Slice(gone, func(i, j int) bool { return gone[i].Name < gone[j].Name })
	for _, m := range gone {
		c.emit(Event{Type: Removed, Name: m.Name, Member: m})
	}
	if first {
		c.cfg.Log.Info("first project list succeeded", "shard", c.cfg.ShardID, "projects", len(list.Items))
	}
	if c.cfg.OnSynced != nil {
		c.cfg.OnSynced()
	}
	return list.ResourceVersion, nil
}

// consume applies watch events until the watch ends. ok is false when it
// ended with an error (a relist follows); true when it simply closed.
func (c *Client) consume(ctx context.Context, w watch.Interface, rv string) (string, bool) {
	for {
		select {
		case <-ctx.Done():
			return rv, true
		case ev, open := <-w.ResultChan():
			if !open {
				return rv, true
			}
			switch ev.Type {
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				c.cfg.Log.Info("project watch error; relisting, keeping the last known membership", "error", err.Error())
				return rv, false
			case watch.Bookmark:
				if acc, err := meta.Accessor(ev.Object); err == nil {
					rv = acc.GetResourceVersion()
				}
			case watch.Added, watch.Modified:
				p, ok := ev.Object.(*infrav1alpha1.Project)
				if !ok {
					continue
				}
				rv = p.ResourceVersion
				if !c.observe(p) {
					c.remove(p.Name)
				}
			case watch.Deleted:
				p, ok := ev.Object.(*infrav1alpha1.Project)
				if !ok {
					continue
				}
				rv = p.ResourceVersion
				c.remove(p.Name)
			}
		}
	}
}
