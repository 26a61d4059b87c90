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

package writer

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// DataPlaneEpoch is a DataPlane that counts its changes: while Epoch
// stands, Gateway reports the same for every Gateway.
type DataPlaneEpoch interface {
	Epoch() uint64
}

// gatewayRound is what the last Gateway round that tried every Gateway
// without an error did: the Result, the data plane's epoch read before
// it, and which of the Result's Gateways it settled.
type gatewayRound struct {
	res     *translator.Result
	epoch   uint64
	settled []bool
}

// gatewayWalk goes through a Result's Gateways alongside those of the last
// complete Gateway round (lastWalk). While the data plane's epoch stands,
// a Gateway desired as the very status it was desired as there (the
// translator's Memo hands an unchanged Gateway the status it made last
// time), settled then, and with no informer event since, is as that round
// left it: settled, without asking the data plane, reading it or hashing
// its status. At 1,000 Gateways a route change made a round ask about all
// of them.
type gatewayWalk struct {
	lastWalk[translator.GatewayStatus]
	settled []bool
}

// gatewayWalk is the walk of this round, nil when the round must ask
// about every Gateway (no complete round before, the data plane changed
// or counts no epochs, or the Gateways' changes are not tracked in full),
// and the data plane's epoch read before the round.
func (w *Writer) gatewayWalk(read objectReader) (*gatewayWalk, uint64) {
	changed, tracked := w.gatewayChanges.take()
	var epoch uint64
	if w.DataPlane != nil {
		e, ok := w.DataPlane.(DataPlaneEpoch)
		if !ok {
			return nil, 0
		}
		epoch = e.Epoch()
	}
	last := w.gatewaysDone
	if last == nil || last.epoch != epoch || !tracked["Gateway"] || read.ix == nil {
		return nil, epoch
	}
	name := func(g *translator.GatewayStatus) types.NamespacedName { return g.NamespacedName }
	return &gatewayWalk{
		lastWalk: lastWalk[translator.GatewayStatus]{last: last.res.Gateways, kind: "Gateway",
			changed: changedIn(changed, "Gateway", last.res.Gateways, name), name: name},
		settled: last.settled,
	}, epoch
}

// skip reports whether d, the next desired status, is settled as the
// last round left it, forgetting the Gateways of the last round before it.
func (g *gatewayWalk) skip(s *settledStatuses, d *translator.GatewayStatus) bool {
	prev, i := g.next(s, d.NamespacedName)
	if prev == nil || !g.settled[i] || prev.Generation != d.Generation || prev.Scope != d.Scope || !sameGatewayStatus(d, prev) {
		return false
	}
	return !g.changed.has(i)
}
