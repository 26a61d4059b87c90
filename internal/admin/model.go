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

package admin

import (
	"context"
	"sync"
	"time"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// Model is what the admin API reads: the latest translation (it is a
// provider.Sink) and, when this replica runs discovery, the fleet.
type Model struct {
	// Discovery is the snapshot stream server; nil when discovery is off.
	Discovery *discovery.Server
	// IsLeader reports whether this replica holds the lease (nil: yes).
	IsLeader func() bool

	mu       sync.RWMutex
	res      *translator.Result
	revision uint64
	built    time.Time
}

// Accept keeps res, the newest translation.
func (m *Model) Accept(_ context.Context, res *translator.Result) {
	m.mu.Lock()
	m.res, m.built = res, time.Now()
	m.revision++
	m.mu.Unlock()
}

// Input reads everything the views need, at one moment.
func (m *Model) Input() Input {
	m.mu.RLock()
	in := Input{Result: m.res, Revision: m.revision, Built: m.built, Now: time.Now(), Leader: m.IsLeader == nil || m.IsLeader()}
	m.mu.RUnlock()
	if m.Discovery != nil {
		in.Discovery = true
		in.Proxies, in.Scopes = m.Discovery.Fleet()
		in.DataPlane = m.Discovery.GatewayState
	}
	return in
}

// Input is one consistent reading of the Model; the views are pure
// functions of it.
type Input struct {
	Result   *translator.Result
	Revision uint64
	Built    time.Time
	Now      time.Time
	Leader   bool
	// Discovery is false when this replica does not run the snapshot
	// stream; the fleet is then unknown (not empty).
	Discovery bool
	Proxies   []discovery.Proxy
	Scopes    []discovery.ScopeState
	// DataPlane reports the proxies' view of one Gateway generation.
	DataPlane func(namespace, name string, generation int64) discovery.GatewayState
}
