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
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
)

// requestIDHeader names a request across the proxy and its upstream
// (canonical form of X-Request-Id).
const requestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds a client's X-Request-Id the proxy keeps.
const maxRequestIDLen = 128

// requestID gives r its request id, before any filter runs: the client's
// X-Request-Id when it sent exactly one that is short printable ASCII
// without spaces, else a new random one, set on r so that it goes
// upstream. The access log writes it.
func requestID(r *http.Request) string {
	if v := r.Header[requestIDHeader]; len(v) == 1 && validRequestID(v[0]) {
		return v[0]
	}
	var b [16]byte
	// Unique, not secret: math/rand/v2's generator suffices.
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64()) //nolint:gosec // G404: an identifier, not a secret
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64()) //nolint:gosec // G404: an identifier, not a secret
	id := hex.EncodeToString(b[:])
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header[requestIDHeader] = []string{id}
	return id
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
