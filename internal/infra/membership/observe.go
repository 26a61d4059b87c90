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
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

// seedable checks a seeded member as an observed one would be checked.
func (c *Client) seedable(m Member) error {
	if m.ShardID != c.cfg.ShardID {
		return fmt.Errorf("assigned to shard %s", m.ShardID)
	}
	if c.cfg.Keys != nil {
		if err := c.cfg.Keys.Verify(m.fields(), m.TrustSignature); err != nil {
			return err
		}
		if err := c.checkRemovalLocked(m.Name, m.TrustSignature.SignedAt.Time); err != nil {
			return err
		}
	}
	return validAgentCA(m.Certificates)
}

// validAgentCA accepts an absent agent CA (no agent can authenticate) and
// PEM certificates that parse.
func validAgentCA(certs string) error {
	if certs == "" {
		return nil
	}
	_, err := trust.ParseAgentCA(certs)
	return err
}

// remove takes a Project out of the membership (deleted, or no longer
// belonging) and remembers its newest accepted signature.
func (c *Client) remove(name string) {
	c.mu.Lock()
	m, ok := c.members[name]
	delete(c.members, name)
	delete(c.refused, name)
	if ok {
		c.rememberRemovalLocked(m)
		c.pruneRemovalsLocked()
	}
	c.cfg.Metrics.Members.Set(float64(len(c.members)))
	c.mu.Unlock()
	if ok {
		c.emit(Event{Type: Removed, Name: name, Member: m})
	}
}

// observe applies one observed Project. It returns false when the Project
// does not belong to the membership (another shard, or never validly signed).
func (c *Client) observe(p *infrav1alpha1.Project) bool {
	if p.Spec.ShardID != c.cfg.ShardID {
		c.cfg.Metrics.Ignored.WithLabelValues("shard_mismatch").Inc()
		c.cfg.Log.Info("ignoring project assigned to another shard: check --shard-id and the infra-apiserver wiring",
			"project", p.Name, "spec.shardID", p.Spec.ShardID, "shard", c.cfg.ShardID)
		return false
	}
	obs := observedMember(p)

	c.mu.Lock()
	prev, had := c.members[p.Name]
	next, refusal := c.decideLocked(prev, had, obs)
	repeat := c.noteRefusalLocked(p, refusal)
	if refusal != nil && !had {
		c.mu.Unlock()
		if !repeat {
			c.reportRefusal(p, nil, refusal)
		}
		return false
	}
	if refusal != nil {
		// Keep the accepted signed values; apply the rest.
		next = prev
		next.Ready = obs.Ready
	} else if !had {
		// The member now carries the newest accepted signedAt.
		delete(c.removals, p.Name)
	}
	c.members[p.Name] = next
	c.cfg.Metrics.Members.Set(float64(len(c.members)))
	c.mu.Unlock()

	if refusal != nil {
		if !repeat {
			c.reportRefusal(p, &prev, refusal)
		}
		return true
	}
	c.emitChanges(p.Name, prev, had, next)
	return true
}

// observedMember is the Project as observed, before the trust rule.
func observedMember(p *infrav1alpha1.Project) Member {
	obs := Member{Name: p.Name, ShardID: p.Spec.ShardID, APIServerEndpoint: p.Spec.APIServerEndpoint, RelayRoots: p.Spec.RelayRoots}
	if p.Spec.AgentCA != nil {
		obs.Certificates = p.Spec.AgentCA.Certificates
	}
	if p.Spec.TrustSignature != nil {
		obs.TrustSignature = p.Spec.TrustSignature.DeepCopy()
	}
	if cond := meta.FindStatusCondition(p.Status.Conditions, infrav1alpha1.ConditionReady); cond != nil {
		obs.Ready = cond.Status
	}
	return obs
}

// noteRefusalLocked remembers the generation of a refused change (and
// forgets it on acceptance). It reports whether that generation was refused
// already: then the observation is a status-only update of a refused object
// and is not reported again. c.mu is held.
func (c *Client) noteRefusalLocked(p *infrav1alpha1.Project, refusal error) bool {
	if refusal == nil {
		delete(c.refused, p.Name)
		return false
	}
	g, seen := c.refused[p.Name]
	c.refused[p.Name] = p.Generation
	return seen && g == p.Generation
}

// emitChanges announces an accepted observation: Added for a newcomer;
// EndpointChanged and TrustChanged for what changed in a member.
func (c *Client) emitChanges(name string, prev Member, had bool, next Member) {
	if !had {
		c.emit(Event{Type: Added, Name: name, Member: copyMember(next)})
		return
	}
	if next.APIServerEndpoint != prev.APIServerEndpoint {
		c.emit(Event{Type: EndpointChanged, Name: name, Member: copyMember(next), Previous: &prev})
	}
	if next.Certificates != prev.Certificates || next.RelayRoots != prev.RelayRoots {
		c.emit(Event{Type: TrustChanged, Name: name, Member: copyMember(next), Previous: &prev})
	}
}

// decideLocked applies the trust rule to an observation: a change of signed
// fields needs a valid signature not older than the accepted one (or, for a
// Project seen again after its removal, than the one accepted before it),
// and the agent CA must parse. It returns the member to keep on acceptance,
// or the refusal. c.mu is held.
func (c *Client) decideLocked(prev Member, had bool, obs Member) (Member, error) {
	next := obs
	if c.cfg.Keys != nil {
		var prevAcc *trust.Accepted
		if had {
			prevAcc = &trust.Accepted{Fields: prev.fields()}
			if prev.TrustSignature != nil {
				prevAcc.Signature = *prev.TrustSignature
			}
		}
		decision, acc, err := trust.Decide(c.cfg.Keys, prevAcc, obs.fields(), obs.TrustSignature)
		if decision == trust.Refuse {
			return prev, err
		}
		next.TrustSignature = acc.Signature.DeepCopy()
		if !had {
			if err := c.checkRemovalLocked(obs.Name, acc.Signature.SignedAt.Time); err != nil {
				return prev, err
			}
		}
	}
	if !had || next.Certificates != prev.Certificates {
		if err := validAgentCA(next.Certificates); err != nil {
			return prev, err
		}
	}
	return next, nil
}

func (c *Client) reportRefusal(p *infrav1alpha1.Project, kept *Member, err error) {
	reason := "invalid"
	switch {
	case errors.Is(err, trust.ErrUnsigned):
		reason = "unsigned"
	case errors.Is(err, trust.ErrUnknownKey):
		reason = "unknown_key"
	case errors.Is(err, trust.ErrStale):
		reason = "stale"
	case errors.Is(err, trust.ErrBadSignature):
		reason = "bad_signature"
	case errors.Is(err, trust.ErrInvalidAgentCA):
		reason = "invalid_agent_ca"
	}
	c.cfg.Metrics.TrustRefused.WithLabelValues(reason).Inc()
	c.cfg.Log.Info("refusing a change of signed project fields; keeping the last accepted values",
		"project", p.Name, "resourceVersion", p.ResourceVersion, "reason", reason, "error", err.Error())
	ev := Event{Type: TrustRefused, Name: p.Name, Err: err}
	if kept != nil {
		ev.Member = copyMember(*kept)
	}
	c.emit(ev)
}

func (c *Client) emit(ev Event) {
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(ev)
	}
}
