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

	"k8s.io/client-go/tools/cache"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

// reflectorStore is what the Reflector writes to. Replace is a complete list
// (a LIST, or a WatchList stream up to its initial-events bookmark); Add,
// Update and Delete are watch events. It keeps no copy of the Projects: each
// call goes through the trust handlers (observe.go) into the membership. A
// failed list never reaches it, so a transport failure never shrinks the
// membership.
//
// A Reflector with this store rather than an informer, because the
// membership is not a cache of Projects: an informer keeps its own copy,
// tells its handlers about single objects but not that a list completed
// (which readiness and OnSynced need), and could not remove seeded members
// it never listed.
type reflectorStore struct{ c *Client }

var _ cache.ReflectorStore = reflectorStore{}

func (s reflectorStore) Add(obj any) error    { return s.apply(obj) }
func (s reflectorStore) Update(obj any) error { return s.apply(obj) }

// apply observes one Project; one that no longer belongs leaves.
func (s reflectorStore) apply(obj any) error {
	p, ok := obj.(*infrav1alpha1.Project)
	if !ok {
		return fmt.Errorf("membership store: want a *Project, got %T", obj)
	}
	if !s.c.observe(p) {
		s.c.remove(p.Name)
	}
	return nil
}

func (s reflectorStore) Delete(obj any) error {
	name, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj) // a Project's key is its name
	if err != nil {
		return fmt.Errorf("membership store: %w", err)
	}
	s.c.remove(name)
	return nil
}

// Replace applies a complete list. A list holding anything but Projects is
// refused as a whole (the Reflector lists again): applying part of it would
// remove members that are there.
func (s reflectorStore) Replace(items []any, _ string) error {
	projects := make([]*infrav1alpha1.Project, 0, len(items))
	for _, obj := range items {
		p, ok := obj.(*infrav1alpha1.Project)
		if !ok {
			return fmt.Errorf("membership store: want a list of *Project, got a %T in it", obj)
		}
		projects = append(projects, p)
	}
	s.c.applyList(projects)
	return nil
}

// Resync is the Reflector's periodic resync, which Run does not ask for.
func (s reflectorStore) Resync() error { return nil }

// applyList diffs a complete list against the membership: each Project is
// observed, members not in it are removed. It makes the client ready and
// then calls OnSynced.
func (c *Client) applyList(projects []*infrav1alpha1.Project) {
	seen := map[string]bool{}
	for _, p := range projects {
		if c.observe(p) {
			seen[p.Name] = true
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
		c.cfg.Log.Info("first project list succeeded", "shard", c.cfg.ShardID, "projects", len(projects))
	}
	if c.cfg.OnSynced != nil {
		c.cfg.OnSynced()
	}
}
