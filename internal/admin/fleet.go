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
	"time"

	"github.com/coxswain-go/coxswain/internal/discovery"
)

// FleetView is /api/v1/fleet: every connected proxy and every published
// scope. Only the leader runs the stream: a standby has no fleet.
type FleetView struct {
	Revision  uint64                 `json:"revision"`
	Leader    bool                   `json:"leader"`
	Discovery bool                   `json:"discovery"`
	Proxies   []FleetProxy           `json:"proxies"`
	Scopes    []discovery.ScopeState `json:"scopes"`
}

// FleetProxy is one proxy with its SVID's remaining lifetime.
type FleetProxy struct {
	discovery.Proxy
	SVIDExpiresIn string `json:"svidExpiresIn"`
}

// Fleet builds the fleet view.
func Fleet(in Input) FleetView {
	v := FleetView{Revision: in.Revision, Leader: in.Leader, Discovery: in.Discovery, Proxies: []FleetProxy{}, Scopes: in.Scopes}
	if v.Scopes == nil {
		v.Scopes = []discovery.ScopeState{}
	}
	for _, p := range in.Proxies {
		v.Proxies = append(v.Proxies, FleetProxy{Proxy: p, SVIDExpiresIn: p.SVIDExpiry.Sub(in.Now).Round(time.Second).String()})
	}
	return v
}
