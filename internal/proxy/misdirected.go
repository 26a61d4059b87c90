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

// Misdirected requests (421, RFC 9110 §15.5.20; Gateway API
// GatewayHTTPSListenerDetectMisdirectedRequests), step 4 of the request
// path (serve.go). The HTTPS listeners sharing a port are told apart by
// their hostnames, the hostnames of the port's certificate entries
// (ListenerTLS.Certificates; "" for a listener without one). The SNI of a
// connection selects one of them as certificate selection does: the
// exact hostname, else the longest wildcard suffix, else the one without
// a hostname. A request whose Host selects another of them, by the same
// rule, was sent on a connection made for another listener (HTTP/2
// connection reuse, a client that reuses a connection across hosts): it
// is answered 421, and the client retries on a connection of its own. A
// request without SNI, whose Host is an IP address, or whose Host selects
// no listener of the port, is left to routing (404 when no virtual host
// serves it). A port whose
// certificates all share one hostname has nothing to tell apart.

// listenerHosts indexes the listener hostnames of one HTTPS port; pick
// returns a listener's index, or -1 for none.
type listenerHosts struct {
	exact map[string]int
	wild  map[string]int // by the suffix of "*.<suffix>"
	def   int
}

// compileListenerHosts indexes a port's listener hostnames; nil when
// there are fewer than two (no request can be misdirected).
func compileListenerHosts(in []snapshot.SNICertificate) *listenerHosts {
	lh := &listenerHosts{exact: map[string]int{}, wild: map[string]int{}, def: -1}
	n := 0
	for _, sc := range in {
		h := strings.ToLower(sc.Hostname)
		switch {
		case h == "":
			if lh.def < 0 {
				lh.def, n = n, n+1
			}
		case strings.HasPrefix(h, "*."):
			if _, ok := lh.wild[h[2:]]; !ok {
				lh.wild[h[2:]], n = n, n+1
			}
		default:
			if _, ok := lh.exact[h]; !ok {
				lh.exact[h], n = n, n+1
			}
		}
	}
	if n < 2 {
		return nil
	}
	return lh
}

// pick selects the listener of a host name (SNI, or a Host header with
// or without its port): exact, else the longest wildcard suffix below at
// least one label, else the default; -1 for none. It lowers upper-case
// names in a stack buffer, so it does not allocate.
func (lh *listenerHosts) pick(name string) int {
	h := trimHost(name)
	var buf [256]byte
	if hasUpper(h) {
		if len(h) > len(buf) {
			return lh.def
		}
		n := copy(buf[:], h)
		for i := 0; i < n; i++ {
			if c := buf[i]; 'A' <= c && c <= 'Z' {
				buf[i] = c + 'a' - 'A'
			}
		}
		return lh.pickLower(buf[:n])
	}
	if i, ok := lh.exact[h]; ok {
		return i
	}
	for j := 1; j < len(h); j++ {
		if h[j] == '.' {
			if i, ok := lh.wild[h[j+1:]]; ok {
				return i
			}
		}
	}
	return lh.def
}

func (lh *listenerHosts) pickLower(h []byte) int {
	if i, ok := lh.exact[string(h)]; ok {
		return i
	}
	for j := 1; j < len(h); j++ {
		if h[j] == '.' {
			if i, ok := lh.wild[string(h[j+1:])]; ok {
				return i
			}
		}
	}
	return lh.def
}

// isIPHost reports a Host that is an IP address: it names no listener
// (listener hostnames are never addresses), and a client that sent it
// would open its next connection with the same SNI again.
func isIPHost(hostport string) bool {
	h := trimHost(hostport)
	if len(h) > 0 && h[0] == '[' {
		return true
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return h != ""
}

// misdirected answers 421 to a request on an HTTPS port whose Host
// selects another listener than its connection's SNI did (step 4).
func misdirected(w http.ResponseWriter, r *http.Request, lr *listenerRouter) bool {
	if lr == nil || lr.hosts == nil || r.TLS == nil || r.TLS.ServerName == "" {
		return false
	}
	byHost := lr.hosts.pick(r.Host)
	if byHost < 0 || byHost == lr.hosts.pick(r.TLS.ServerName) || isIPHost(r.Host) {
		return false
	}
	answer(w, http.StatusMisdirectedRequest, "misdirected request: this connection's TLS server name is for another listener; open a connection for this host")
	return true
}
