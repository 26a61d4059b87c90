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
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The proxy's debug endpoints, on the health port beside /healthz and
// /readyz: what the proxy serves now, so "why does this route not
// answer?" starts from facts.
//
//   - /debug/snapshot: the snapshot in force as JSON, its version and when
//     it was applied, and the Gateways (with generations) it serves; private
//     keys and password hashes are replaced by "REDACTED".
//   - /statusz: mode and Gateway, the version and scope in force, the bound
//     ports, and the latest refused snapshot's reason.
//   - /debug/pprof/: Go's profiles, only with Config.EnablePprof
//     (--enable-pprof).

// redacted replaces secrets in debug output.
const redacted = "REDACTED"

// applyError is a refused snapshot.
type applyError struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

func (d *DataPlane) noteApplyError(err error) {
	d.lastApplyError.Store(&applyError{Reason: err.Error(), At: time.Now()})
}

// debugSnapshot is /debug/snapshot's answer.
type debugSnapshot struct {
	Version  string                `json:"version"`
	Applied  time.Time             `json:"applied"`
	Gateways []snapshot.GatewayRef `json:"gateways,omitempty"`
	Snapshot *snapshot.Snapshot    `json:"snapshot"`
}

// statusz is /statusz's answer.
type statusz struct {
	Mode             Mode            `json:"mode"`
	GatewayNamespace string          `json:"gatewayNamespace,omitempty"`
	GatewayName      string          `json:"gatewayName,omitempty"`
	Scope            *snapshot.Scope `json:"scope,omitempty"`
	Version          string          `json:"version,omitempty"`
	Applied          *time.Time      `json:"applied,omitempty"`
	BoundPorts       []int32         `json:"boundPorts"`
	Ready            bool            `json:"ready"`
	NotReadyReason   string          `json:"notReadyReason,omitempty"`
	LastApplyError   *applyError     `json:"lastApplyError,omitempty"`
}

// addDebugHandlers adds the debug endpoints of dp to mux.
func addDebugHandlers(mux *http.ServeMux, cfg Config, dp *DataPlane, readiness *Readiness) {
	mux.HandleFunc("GET /debug/snapshot", func(w http.ResponseWriter, _ *http.Request) {
		st := dp.state.Load()
		if st == nil || st.source == nil {
			http.Error(w, "no snapshot applied yet", http.StatusServiceUnavailable)
			return
		}
		red, err := redactSnapshot(st.source)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, debugSnapshot{Version: st.version, Applied: st.applied, Gateways: red.Gateways, Snapshot: red})
	})
	mux.HandleFunc("GET /statusz", func(w http.ResponseWriter, _ *http.Request) {
		s := statusz{Mode: cfg.Mode, GatewayNamespace: cfg.GatewayNamespace, GatewayName: cfg.GatewayName,
			BoundPorts: dp.BoundPorts(), LastApplyError: dp.lastApplyError.Load()}
		if st := dp.state.Load(); st != nil && st.source != nil {
			scope, applied := st.source.Scope, st.applied
			s.Scope, s.Version, s.Applied = &scope, st.version, &applied
		}
		if readiness != nil {
			s.NotReadyReason = readiness.Reason()
		}
		s.Ready = s.NotReadyReason == ""
		writeJSON(w, s)
	})
	if cfg.EnablePprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
}

// redactSnapshot is a deep copy of s without its secrets: private keys and
// password hashes.
func redactSnapshot(s *snapshot.Snapshot) (*snapshot.Snapshot, error) {
	b, err := snapshot.Encode(s)
	if err != nil {
		return nil, err
	}
	var c snapshot.Snapshot
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	for i := range c.Certificates {
		c.Certificates[i].KeyPEM = redacted
	}
	for li := range c.Listeners {
		for vi := range c.Listeners[li].VirtualHosts {
			for ri := range c.Listeners[li].VirtualHosts[vi].Routes {
				if ba := c.Listeners[li].VirtualHosts[vi].Routes[ri].BasicAuth; ba != nil {
					for ui := range ba.Users {
						ba.Users[ui].Hash = redacted
					}
				}
			}
		}
	}
	return &c, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
