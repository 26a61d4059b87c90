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
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Path normalisation happens before route matching, and the normalised
// path is what the upstream receives, so a backend that normalises paths
// itself (nginx, Tomcat, Spring, Python's http.server) sees the path the
// route was chosen for: "/x/../admin" and "/%2e%2e/admin" cannot reach
// "/admin" past a route that guards it.
//
// The rules, applied to the escaped path as the client sent it:
//  1. percent-encoded unreserved characters (RFC 3986 §2.3: letters,
//     digits, "-", ".", "_", "~") are decoded; other escapes keep their
//     meaning and get upper-case hex digits (§6.2.2.1);
//  2. runs of slashes are merged into one, as nginx's merge_slashes and
//     most backends' own normalisation do, before dot segments are
//     removed, so "/a//../b" is "/b" as a backend would resolve it;
//  3. "." and ".." segments are removed (§5.2.4); ".." never climbs
//     above the root; a path ending in a dot segment keeps its trailing
//     slash.
//
// Encoded "/" (%2F) and "\" (%5C) are never path separators for matching:
// by default the request is answered with a redirect to the path with
// them decoded (then normalised), as Envoy Gateway does by default, so a
// client that meant them as separators gets a path matched as it will be
// served; Reject answers 400 instead. A listener's ClientTraffic may
// decode or keep them instead (normalizeUnder).

// EscapedSlashAction is what the proxy does with a request whose path
// contains %2F or %5C.
type EscapedSlashAction string

const (
	// EscapedSlashRedirect answers 307 with the path decoded and normalised.
	EscapedSlashRedirect EscapedSlashAction = "UnescapeAndRedirect"
	// EscapedSlashReject answers 400.
	EscapedSlashReject EscapedSlashAction = "Reject"
)

// Validate reports an action the proxy does not know.
func (a EscapedSlashAction) Validate() error {
	switch a {
	case "", EscapedSlashRedirect, EscapedSlashReject:
		return nil
	}
	return fmt.Errorf("unknown escaped-slash action %q (want %s or %s)", a, EscapedSlashRedirect, EscapedSlashReject)
}

var errBadEscape = errors.New("invalid percent-encoding in the request path")

// normalizedPath is the result of normalizePath.
type normalizedPath struct {
	// escaped is the normal form, escaped as it goes upstream.
	escaped string
	// changed is false when escaped is the input unchanged.
	changed bool
	// encodedSlash reports %2F or %5C in the input.
	encodedSlash bool
}

// normalizePath normalises an escaped absolute path ("/..."). Anything that
// does not start with "/" (the "*" of OPTIONS, an empty path) is returned
// unchanged.
func normalizePath(p string) (normalizedPath, error) {
	if p == "" || p[0] != '/' || !needsNormalizing(p) {
		return normalizedPath{escaped: p}, nil
	}
	decoded, encodedSlash, err := decodeUnreserved(p)
	if err != nil {
		return normalizedPath{}, err
	}
	out := removeDotSegments(decoded)
	return normalizedPath{escaped: out, changed: out != p, encodedSlash: encodedSlash}, nil
}

// needsNormalizing is the cheap test of the common case: no escapes, no
// empty segment, no segment that starts with a dot.
func needsNormalizing(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			return true
		case '/':
			if i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.') {
				return true
			}
		}
	}
	return false
}

// decodeUnreserved decodes escaped unreserved characters and upper-cases
// the hex digits of the escapes it keeps.
func decodeUnreserved(p string) (string, bool, error) {
	var b strings.Builder
	b.Grow(len(p))
	encodedSlash := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return "", false, errBadEscape
		}
		v := unhex(p[i+1])<<4 | unhex(p[i+2])
		i += 2
		switch {
		case isUnreserved(v):
			b.WriteByte(v)
		default:
			if v == '/' || v == '\\' {
				encodedSlash = true
			}
			b.WriteByte('%')
			b.WriteByte(upperHex[v>>4])
			b.WriteByte(upperHex[v&15])
		}
	}
	return b.String(), encodedSlash, nil
}

const upperHex = "0123456789ABCDEF"

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// removeDotSegments merges slashes and removes dot segments of an absolute
// path whose unreserved characters are decoded.
func removeDotSegments(p string) string {
	segs := make([]string, 0, strings.Count(p, "/"))
	trailing := false
	for rest := p[1:]; ; {
		seg, tail, more := strings.Cut(rest, "/")
		switch seg {
		case "":
			// An empty segment: merged away, unless the path ends here.
			trailing = !more && len(segs) > 0
		case ".":
			trailing = true
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			trailing = true
		default:
			segs = append(segs, seg)
			trailing = false
		}
		if !more {
			break
		}
		rest = tail
	}
	if len(segs) == 0 {
		return "/"
	}
	out := "/" + strings.Join(segs, "/")
	if trailing {
		out += "/"
	}
	return out
}

// unescapeSlashes decodes %2F and %5C of a normalised path (for the
// redirect of EscapedSlashRedirect) and normalises the result again.
func unescapeSlashes(p string) string {
	r := strings.NewReplacer("%2F", "/", "%5C", `\`)
	return removeDotSegments(r.Replace(p))
}

// normalizeRequest normalises the request's path before routing (see the
// rules above) and answers the requests normalisation refuses. It reports
// whether the request goes on to routing.
func (d *DataPlane) normalizeRequest(w http.ResponseWriter, r *http.Request) bool {
	return d.normalizeUnder(w, r, nil)
}

// normalizeUnder is normalizeRequest with the EncodedSlashes action of a
// listener's ClientTraffic (ct, nil for the proxy's default): Redirect
// and Reject as above; Decode routes and forwards the path with them
// decoded to "/" and normalised again; Keep routes on the decoded path
// (r.URL.Path, where they are separators, so a backend that decodes them
// cannot reach a path its route did not guard) and forwards them encoded.
func (d *DataPlane) normalizeUnder(w http.ResponseWriter, r *http.Request, ct *clientTrafficPolicy) bool {
	raw, originForm := requestPath(r)
	np, err := normalizePath(raw)
	if err != nil {
		answer(w, http.StatusBadRequest, "malformed request path")
		return false
	}
	if np.encodedSlash {
		switch ct.slashAction(d.opts.EscapedSlashes) {
		case snapshot.EncodedSlashReject:
			answer(w, http.StatusBadRequest, "encoded slash in the request path")
			return false
		case snapshot.EncodedSlashDecode:
			np.escaped = decodeEncodedSlashes(np.escaped)
			np.changed = np.escaped != raw
		case snapshot.EncodedSlashKeep:
		default:
			loc := unescapeSlashes(np.escaped)
			if r.URL.RawQuery != "" {
				loc += "?" + r.URL.RawQuery
			}
			w.Header()["Location"] = []string{loc}
			answer(w, http.StatusTemporaryRedirect, "the path's encoded slashes are path separators here")
			return false
		}
	}
	if !np.changed {
		return true
	}
	decoded, err := url.PathUnescape(np.escaped)
	if err != nil {
		answer(w, http.StatusBadRequest, "malformed request path")
		return false
	}
	u := *r.URL
	u.Path, u.RawPath = decoded, np.escaped
	r.URL = &u
	if originForm {
		r.RequestURI = np.escaped
		if r.URL.RawQuery != "" || r.URL.ForceQuery {
			r.RequestURI += "?" + r.URL.RawQuery
		}
	}
	return true
}

// requestPath is the escaped path as the client sent it, and whether the
// request target was in origin form ("/path?query").
func requestPath(r *http.Request) (string, bool) {
	if uri := r.RequestURI; uri != "" && uri[0] == '/' {
		if i := strings.IndexByte(uri, '?'); i >= 0 {
			uri = uri[:i]
		}
		return uri, true
	}
	return r.URL.EscapedPath(), false
}
