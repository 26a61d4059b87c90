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

package proxy

// pathIndexMapAt is how many paths a pathIndex holds before it indexes
// them in a map: up to it, comparing each one costs less than hashing
// the request's path, and a list of them takes an eighth of a map's
// memory (most virtual hosts have one or two paths; at 10,000 hosts the
// maps were a third of the compiled routes' heap).
const pathIndexMapAt = 8

// pathIndex is a virtual host's routes by exact path or by prefix: for
// each path, the indexes of its routes in snapshot order. The zero value
// is empty.
type pathIndex struct {
	list []pathRoutes
	m    map[string][]int // set instead of list past pathIndexMapAt paths
}

type pathRoutes struct {
	path   string
	routes []int
}

// add appends route i to path's routes.
func (p *pathIndex) add(path string, i int) {
	if p.m != nil {
		p.m[path] = append(p.m[path], i)
		return
	}
	for j := range p.list {
		if p.list[j].path == path {
			p.list[j].routes = append(p.list[j].routes, i)
			return
		}
	}
	if len(p.list) < pathIndexMapAt {
		p.list = append(p.list, pathRoutes{path, []int{i}})
		return
	}
	p.m = make(map[string][]int, len(p.list)+1)
	for _, e := range p.list {
		p.m[e.path] = e.routes
	}
	p.m[path] = []int{i}
	p.list = nil
}

// get returns path's routes.
func (p *pathIndex) get(path string) ([]int, bool) {
	if p.m != nil {
		l, ok := p.m[path]
		return l, ok
	}
	for j := range p.list {
		if p.list[j].path == path {
			return p.list[j].routes, true
		}
	}
	return nil, false
}

// empty reports an index without paths.
func (p *pathIndex) empty() bool { return p.m == nil && len(p.list) == 0 }
