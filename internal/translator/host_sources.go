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

package translator

import "github.com/coxswain-go/coxswain/internal/snapshot"

// hostSources records, for a listener's virtual hosts, the routes each
// route list hostRoutes made was made from (in emission order), by the
// address of the list's first route. A host that one compiled route
// serves has that route's own list (ownList) and needs no record. The
// translations of one listener share it, each adding the lists it makes:
// a list per host, copied at every change to one of 10,000 hosts, was a
// tenth of what the change allocated.
type hostSources struct {
	m map[*snapshot.Route][]*snapshot.Route
}

// add records that routes, a list hostRoutes made, was made from from.
func (s *hostSources) add(routes []snapshot.Route, from []*snapshot.Route) {
	if s.m == nil {
		s.m = map[*snapshot.Route][]*snapshot.Route{}
	}
	s.m[&routes[0]] = from
}

// made reports whether routes was made from entries' routes, in order:
// the very list of the one compiled route of entries, or a list recorded
// as made from them.
func (s *hostSources) made(routes []snapshot.Route, entries []entry) bool {
	if len(routes) == 0 || len(entries) == 0 {
		return false
	}
	if own := ownList(entries); own != nil {
		return &routes[0] == &own[0] && len(routes) == len(own)
	}
	if s == nil {
		return false
	}
	from, ok := s.m[&routes[0]]
	if !ok || len(from) != len(entries) {
		return false
	}
	for i := range entries {
		if from[i] != entries[i].route {
			return false
		}
	}
	return true
}

// prune drops the records of lists none of hosts has, once they are more
// than the hosts: each keeps a list alive.
func (s *hostSources) prune(hosts []*snapshot.VirtualHost) {
	if len(s.m) <= 2*len(hosts)+64 {
		return
	}
	kept := make(map[*snapshot.Route][]*snapshot.Route, len(hosts))
	for _, vh := range hosts {
		if r := vh.Routes; len(r) > 0 {
			if from, ok := s.m[&r[0]]; ok {
				kept[&r[0]] = from
			}
		}
	}
	s.m = kept
}
