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

import (
	"strings"
)

// validHostname accepts what the snapshot accepts (a lowercase DNS name,
// optionally "*." in front), with labels of at most 63 and names of at most
// 253 characters. Hand-written: it runs for every route hostname.
func validHostname(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	h = strings.TrimPrefix(h, "*.")
	if h == "" {
		return false
	}
	for len(h) > 0 {
		label := h
		if i := strings.IndexByte(h, '.'); i >= 0 {
			label, h = h[:i], h[i+1:]
			if h == "" {
				return false // trailing dot
			}
		} else {
			h = ""
		}
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return true
}

// hostMatches reports whether pattern (exact, "*.suffix" or "" for any)
// matches host (exact or wildcard), with Gateway API semantics: a wildcard
// covers one or more labels.
func hostMatches(pattern, host string) bool {
	if pattern == "" || pattern == host {
		return true
	}
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		h := host
		if strings.HasPrefix(h, "*.") {
			h = h[1:]
			// "*.a.example.com" is inside "*.example.com".
			return strings.HasSuffix(h, suffix) && len(h) > len(suffix)
		}
		return strings.HasSuffix(h, suffix) && len(h) > len(suffix)
	}
	return false
}

// intersect is the hostnames a route serves on a listener: the listener's
// hostname (""=any) intersected with the route's hostnames (none=any). The
// result has "*" for "any"; empty means no intersection.
func intersect(listener string, route []string) []string {
	if len(route) == 0 {
		if listener == "" {
			return []string{"*"}
		}
		return []string{listener}
	}
	var out []string
	seen := map[string]bool{}
	add := func(h string) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, r := range route {
		switch {
		case listener == "":
			add(r)
		case hostMatches(listener, r):
			add(r)
		case hostMatches(r, listener):
			add(listener)
		}
	}
	return out
}

// matchScore ranks how specifically a listener hostname matches a host:
// exact beats the longest wildcard suffix beats "any"; -1 means no match.
func matchScore(listener, host string) int {
	switch {
	case listener == host:
		return 1 << 20
	case listener == "":
		return 0
	case hostMatches(listener, host):
		return len(listener)
	}
	return -1
}

// routeHostnames normalises a route's hostnames, dropping invalid ones.
func routeHostnames[T ~string](hs []T) (out []string, bad []string) {
	for _, h := range hs {
		s := strings.ToLower(string(h))
		if !validHostname(s) {
			bad = append(bad, string(h))
			continue
		}
		out = append(out, s)
	}
	return out, bad
}
