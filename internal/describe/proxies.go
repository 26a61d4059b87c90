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

package describe

import (
	"github.com/coxswain-go/coxswain/internal/admin"
)

// Proxies adds, to a Gateway's report, the proxies of the controller's
// fleet (its admin API's /api/v1/fleet) that serve the Gateway and the
// generation each acked; a proxy behind generation, one that refused a
// snapshot, or no proxy at all is a problem.
func (r *Report) Proxies(fleet admin.FleetView, ns, name string, generation int64) {
	if !fleet.Leader {
		r.problem(1, "proxies: the controller replica that answered is a standby; it has no fleet")
		return
	}
	serving := 0
	for _, p := range fleet.Proxies {
		var acked int64 = -1
		for _, g := range p.Gateways {
			if g.Namespace == ns && g.Name == name {
				acked = g.Generation
			}
		}
		if acked < 0 && p.Rejected == nil {
			continue
		}
		serving++
		switch {
		case p.Rejected != nil:
			r.problem(1, "proxy %s (scope %s) refused snapshot %s: %s", p.NodeID, p.Scope, p.Rejected.Version, p.Rejected.Detail)
		case acked < generation:
			r.problem(1, "proxy %s (scope %s) serves generation %d, behind %d", p.NodeID, p.Scope, acked, generation)
		default:
			r.say(1, "proxy %s (scope %s) serves generation %d, ports %v bound, SVID expires in %s", p.NodeID, p.Scope, acked, p.BoundPorts, p.SVIDExpiresIn)
		}
	}
	if serving == 0 {
		r.problem(1, "no connected proxy serves this Gateway")
	}
}
