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
)

// The fast parsers (parseSimpleRequest for client heads, readSimpleResponse
// for upstream heads) read the common head in one pass; each field line
// they accept is one net/http would read the same way, and anything else
// sends the head to net/http's own parser.

// parseFieldLine splits one header field line: a token name, a colon, a
// value without control characters, trimmed of spaces and tabs. A line
// that starts with a space or tab (obs-fold) fails the token check.
// canonical reports that name is its own http.CanonicalHeaderKey (an
// upper-case letter first and after each dash, lower-case elsewhere), so
// that callers skip a second pass over it.
func parseFieldLine(l string) (name, value string, canonical, ok bool) {
	colon := strings.IndexByte(l, ':')
	if colon <= 0 {
		return "", "", false, false
	}
	name = l[:colon]
	canonical, upper := true, true
	for j := 0; j < len(name); j++ {
		c := name[j]
		if !isTokenByte(c) {
			return "", "", false, false
		}
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			canonical = false
		}
		upper = c == '-'
	}
	value = trimSpaceTab(l[colon+1:])
	for j := 0; j < len(value); j++ {
		if c := value[j]; (c < ' ' && c != '\t') || c == 0x7f {
			return "", "", false, false
		}
	}
	return name, value, canonical, true
}

// trimSpaceTab is strings.Trim(v, " \t") without building a set of the
// cut characters at every call.
func trimSpaceTab(v string) string {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// canonicalKey is http.CanonicalHeaderKey(name) for a name
// parseFieldLine accepted.
func canonicalKey(name string, canonical bool) string {
	if canonical {
		return name
	}
	return http.CanonicalHeaderKey(name)
}

// addFieldValue adds v to h under key. A key's first value is backed by
// vals[i], so one array serves every field of the head; a later value is
// appended to a copy, never into that array.
func addFieldValue(h http.Header, vals []string, i int, key, v string) {
	vals[i] = v
	if old, ok := h[key]; ok {
		h[key] = append(old[:len(old):len(old)], v)
	} else {
		h[key] = vals[i : i+1 : i+1]
	}
}

// isTokenByte reports the characters of an RFC 9110 token.
func isTokenByte(c byte) bool {
	return tokenBytes[c]
}

// tokenBytes is the table isTokenByte reads: every visible ASCII
// character but the delimiters.
var tokenBytes = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune("()<>@,;:\\\"/[]?={}", c)
	}
	return t
}()
