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

package membership

import (
	"fmt"
	"sort"
	"time"

	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

const (
	// DefaultRemovalRetention is how long the newest accepted signedAt of a
	// removed Project is remembered. Trust keys are expected to be retired
	// well within it: once the key of an old signature has left the key file,
	// that signature no longer verifies and needs no memory to be refused.
	DefaultRemovalRetention = 365 * 24 * time.Hour
	// DefaultMaxRemovals bounds the number of removed Projects remembered
	// (about 100 bytes each in the relay's snapshot file). Only Projects that
	// were accepted with a valid signature are ever remembered, so the bound
	// cannot be exhausted without the signing key. When it is exceeded the
	// oldest removals are forgotten first.
	DefaultMaxRemovals = 10000
)

// Removal remembers the newest signedAt accepted for a Project that has left
// the membership. A Project of that name is accepted again only with a
// signature at least as new: without this memory, deleting a Project and
// recreating it with an older, validly signed agent CA would roll its trust
// back.
type Removal struct {
	Name      string    `json:"name"`
	SignedAt  time.Time `json:"signedAt"`
	RemovedAt time.Time `json:"removedAt"`
}

// Removals returns the remembered removals, sorted by name.
func (c *Client) Removals() []Removal {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Removal, 0, len(c.removals))
	for _, r := range c.removals {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rememberRemovalLocked records that m left the membership; the caller
// prunes afterwards (once for a batch). c.mu is held.
func (c *Client) rememberRemovalLocked(m Member) {
	if m.TrustSignature == nil {
		return
	}
	at := m.TrustSignature.SignedAt.UTC()
	if old, ok := c.removals[m.Name]; ok && old.SignedAt.After(at) {
		at = old.SignedAt
	}
	c.removals[m.Name] = Removal{Name: m.Name, SignedAt: at, RemovedAt: c.cfg.Now().UTC()}
}

// pruneRemovalsLocked applies the retention bounds. c.mu is held.
func (c *Client) pruneRemovalsLocked() {
	cutoff := c.cfg.Now().Add(-c.cfg.RemovalRetention)
	for name, r := range c.removals {
		if r.RemovedAt.Before(cutoff) {
			delete(c.removals, name)
		}
	}
	if len(c.removals) <= c.cfg.MaxRemovals {
		return
	}
	all := make([]Removal, 0, len(c.removals))
	for _, r := range c.removals {
		all = append(all, r)
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].RemovedAt.Equal(all[j].RemovedAt) {
			return all[i].RemovedAt.Before(all[j].RemovedAt)
		}
		return all[i].Name < all[j].Name
	})
	for _, r := range all[:len(all)-c.cfg.MaxRemovals] {
		delete(c.removals, r.Name)
	}
}

// checkRemovalLocked refuses a signature older than the newest one accepted
// for a removed Project of the same name. c.mu is held.
func (c *Client) checkRemovalLocked(name string, signedAt time.Time) error {
	r, ok := c.removals[name]
	if !ok || !signedAt.Before(r.SignedAt) {
		return nil
	}
	return fmt.Errorf("%w: signedAt %s is older than %s, accepted before the project was removed at %s",
		trust.ErrStale, signedAt.UTC().Format(time.RFC3339), r.SignedAt.Format(time.RFC3339), r.RemovedAt.Format(time.RFC3339))
}
