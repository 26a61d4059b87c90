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

import (
	"net/http"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// rewriteTarget applies the route's URLRewrite (step 10 of the request
// path, serve.go): the Host and path the upstream receives, and whether
// the path was rewritten.
func rewriteTarget(rt *route, r *http.Request) (host, path string, rewritten bool) {
	host, path = r.Host, r.URL.Path
	rw := rt.rewrite
	if rw == nil {
		return host, path, false
	}
	if rw.Hostname != "" {
		host = rw.Hostname
	}
	if rw.Path != nil {
		path, rewritten = rewritePath(rw.Path, rt, r.URL.Path), true
	}
	return host, path, rewritten
}

// rewritePath applies a path modifier to the request path.
func rewritePath(pm *snapshot.PathModifier, rt *route, path string) string {
	switch pm.Type {
	case snapshot.ReplaceFullPath:
		return pm.Value
	case snapshot.ReplacePrefixMatch:
		return replacePrefix(path, rt.prefix, pm.Value)
	case snapshot.ReplaceRegex:
		if rt.pathRE == nil {
			return path
		}
		m := rt.pathRE.FindStringSubmatchIndex(path)
		if m == nil {
			return path
		}
		return string(rt.pathRE.ExpandString(nil, pm.Value, path, m))
	}
	return path
}

// replacePrefix swaps the matched (normalised) prefix for value, keeping
// exactly one slash at the seam.
func replacePrefix(path, prefix, value string) string {
	rest := path
	if len(path) >= len(prefix) {
		rest = path[len(prefix):]
	}
	if strings.HasSuffix(value, "/") && strings.HasPrefix(rest, "/") {
		rest = rest[1:]
	}
	out := value + rest
	if out == "" {
		return "/"
	}
	if out[0] != '/' {
		out = "/" + out
	}
	return out
}
