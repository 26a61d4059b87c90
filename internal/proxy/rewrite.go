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
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// rewriteTarget applies the route's URLRewrite (step 10 of the request
// path, serve.go), then its upstream path normalisation: the Host and path
// the upstream receives, and whether the path was rewritten (the path is
// then sent as it is here, decoded, rather than as the client escaped it).
func rewriteTarget(rt *route, r *http.Request) (host, path string, rewritten bool) {
	host, path = r.Host, r.URL.Path
	if rw := rt.rewrite; rw != nil {
		if rw.Hostname != "" {
			host = rw.Hostname
		}
		if rw.Path != nil {
			path, rewritten = rewritePath(rw.Path, rt, r.URL.Path), true
		}
	}
	if pn := rt.policies.pathNorm; pn != nil {
		path, rewritten = normalizeUpstreamPath(pn, r, path, rewritten)
	}
	return host, path, rewritten
}

// normalizeUpstreamPath applies a route's PathNormalization to the
// upstream path (decoded; rewritten when the rewrite changed it).
// DecodeSlashes makes the client's %2F and %5C (which the listener kept)
// separators: the path is sent decoded, "\" as "/". MergeSlashes then
// collapses runs of "/". A client path that was not rewritten had its
// own runs merged before routing (normalize.go), so without
// DecodeSlashes it is left alone: merging its decoded form would decode
// the slashes it keeps encoded.
func normalizeUpstreamPath(pn *snapshot.PathNormalization, r *http.Request, path string, rewritten bool) (string, bool) {
	if !rewritten && (!pn.DecodeSlashes || !hasEncodedSlash(r.URL.RawPath)) {
		return path, false
	}
	out := path
	if pn.DecodeSlashes {
		out = strings.ReplaceAll(out, `\`, "/")
		rewritten = true
	}
	if pn.MergeSlashes {
		out = mergeSlashes(out)
	}
	return out, rewritten || out != path
}

// hasEncodedSlash reports %2F or %5C (any case) in an escaped path.
func hasEncodedSlash(escaped string) bool {
	for i := 0; i+2 < len(escaped); i++ {
		if escaped[i] != '%' {
			continue
		}
		switch hi, lo := escaped[i+1], escaped[i+2]|0x20; {
		case hi == '2' && lo == 'f', hi == '5' && lo == 'c':
			return true
		}
	}
	return false
}

// mergeSlashes collapses every run of "/" into one.
func mergeSlashes(p string) string {
	if !strings.Contains(p, "//") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// rewritePath applies a path modifier to the request path.
func rewritePath(pm *snapshot.PathModifier, rt *route, path string) string {
	switch pm.Type {
	case snapshot.ReplaceFullPath:
		return pm.Value
	case snapshot.ReplacePrefixMatch:
		return replacePrefix(path, rt.prefix, pm.Value)
	case snapshot.ReplaceRegex:
		if pm.Pattern != "" {
			return replaceRegex(pm, path)
		}
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

// replaceRegex replaces every match of the modifier's Pattern in the path
// with its Value (regexp.ReplaceAllString: "$1" is a group), unanchored;
// the result gets a leading "/" when it lacks one. A pattern that does
// not compile (compileRewrite refuses it) leaves the path as it is.
func replaceRegex(pm *snapshot.PathModifier, path string) string {
	re, err := rewriteRegexp(pm.Pattern)
	if err != nil {
		return path
	}
	out := re.ReplaceAllString(path, pm.Value)
	if out == "" || out[0] != '/' {
		out = "/" + out
	}
	return out
}

// compileRewrite checks the patterns of a route's URL rewrite and
// redirect path modifiers (PathRewriteRegex), compiling them into the
// pattern cache; an invalid one fails the route.
func compileRewrite(rw *snapshot.URLRewrite, rd *snapshot.Redirect) error {
	if rw != nil {
		if err := compilePathModifier(rw.Path); err != nil {
			return fmt.Errorf("rewrite: %w", err)
		}
	}
	if rd != nil {
		if err := compilePathModifier(rd.Path); err != nil {
			return fmt.Errorf("redirect: %w", err)
		}
	}
	return nil
}

// compilePathModifier checks a path modifier's Pattern.
func compilePathModifier(pm *snapshot.PathModifier) error {
	if pm == nil || pm.Pattern == "" {
		return nil
	}
	if pm.Type != snapshot.ReplaceRegex {
		return fmt.Errorf("pattern %q is for ReplaceRegex only, not %s", pm.Pattern, pm.Type)
	}
	if _, err := rewriteRegexp(pm.Pattern); err != nil {
		return fmt.Errorf("pattern %q: %w", pm.Pattern, err)
	}
	return nil
}

// rewriteRegexpsMax bounds the pattern cache; past it the cache starts
// over (the patterns in use compile again at their next request).
const rewriteRegexpsMax = 4096

// rewriteRegexps caches the compiled rewrite patterns by source, shared by
// every snapshot: compileRewrite fills it, requests read it.
var (
	rewriteRegexps sync.Map // string -> *regexp.Regexp
	rewriteCached  atomic.Int64
)

// rewriteRegexp is the compiled pattern, from the cache when it is there.
func rewriteRegexp(pattern string) (*regexp.Regexp, error) {
	if re, ok := rewriteRegexps.Load(pattern); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	if rewriteCached.Add(1) > rewriteRegexpsMax {
		rewriteRegexps.Clear()
		rewriteCached.Store(1)
	}
	rewriteRegexps.Store(pattern, re)
	return re, nil
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
