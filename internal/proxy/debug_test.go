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
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestDebugEndpoints: /debug/snapshot shows the snapshot in force with its
// version and without private keys or password hashes; /statusz the mode,
// scope, version, bound ports and the latest refused snapshot's reason;
// /debug/pprof/ only when enabled.
func TestDebugEndpoints(t *testing.T) {
	for _, pprofOn := range []bool{false, true} {
		cfg := Config{Mode: ModeShared, EnablePprof: pprofOn}
		readiness := NewReadiness("no routing snapshot applied yet")
		p := newTestPlane(t)
		admin := NewAdmin(cfg, readiness)
		admin.AttachDataPlane(p.DataPlane)
		healthLn, metricsLn := listen(t), listen(t)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = admin.Serve(ctx, healthLn, metricsLn) }()
		base := "http://" + healthLn.Addr().String()

		if code, _ := get(t, base+"/debug/snapshot"); code != http.StatusServiceUnavailable {
			t.Errorf("/debug/snapshot before any snapshot: %d, want 503", code)
		}
		b := startBackend(t, "b", false, nil)
		srv := testCert(t, "app.example")
		port, tlsPort := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
		s := retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)}, snapshot.Route{ID: "r", Backends: to("ns/b:80"),
			BasicAuth: &snapshot.BasicAuth{Users: []snapshot.BasicAuthUser{{Name: "alice", Hash: "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ="}}}})
		s.Certificates = []snapshot.Certificate{srv}
		s.Listeners = append(s.Listeners, snapshot.Listener{Name: "tls", Port: tlsPort, Protocol: snapshot.ProtocolHTTPS,
			TLS:          &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: srv.Name}}},
			VirtualHosts: []*snapshot.VirtualHost{{Hostname: "*", Routes: []snapshot.Route{{ID: "t", Backends: to("ns/b:80")}}}}})
		s.Gateways = []snapshot.GatewayRef{{Namespace: "ns", Name: "web", Generation: 7, Ports: []int32{port}}}
		snapshot.Normalize(s)
		p.mustApply(t, s)
		readiness.Ready()

		code, body := get(t, base+"/debug/snapshot")
		var ds debugSnapshot
		if err := json.Unmarshal([]byte(body), &ds); code != http.StatusOK || err != nil {
			t.Fatalf("/debug/snapshot: %d %v", code, err)
		}
		if ds.Version != p.Version() || ds.Version == "" || len(ds.Gateways) != 1 || ds.Gateways[0].Generation != 7 {
			t.Errorf("/debug/snapshot version %q gateways %+v, want %q and generation 7", ds.Version, ds.Gateways, p.Version())
		}
		for _, secret := range []string{"PRIVATE KEY", "5en6G6MezRroT3XKqkdPOmY"} {
			if strings.Contains(body, secret) {
				t.Errorf("/debug/snapshot shows a secret (%q)", secret)
			}
		}
		if len(ds.Snapshot.Certificates) != 1 || ds.Snapshot.Certificates[0].KeyPEM != redacted || ds.Snapshot.Certificates[0].CertPEM != srv.CertPEM {
			t.Errorf("/debug/snapshot certificates: %+v, want the chain with the key redacted", ds.Snapshot.Certificates)
		}
		if s.Certificates[0].KeyPEM != srv.KeyPEM {
			t.Error("redaction changed the snapshot in force")
		}

		// A refused snapshot: the reason shows, the one in force stays.
		bad := *s
		bad.EndpointSets = nil
		if err := p.Apply(&bad); err == nil {
			t.Fatal("a snapshot whose routes name an unknown endpoint set was applied")
		}
		code, body = get(t, base+"/statusz")
		var sz statusz
		if err := json.Unmarshal([]byte(body), &sz); code != http.StatusOK || err != nil {
			t.Fatalf("/statusz: %d %v", code, err)
		}
		if sz.Mode != ModeShared || sz.Scope == nil || sz.Scope.Kind != snapshot.ScopeSharedPool || sz.Version != ds.Version || !sz.Ready ||
			len(sz.BoundPorts) != 2 || sz.LastApplyError == nil || !strings.Contains(sz.LastApplyError.Reason, "endpoint set") {
			t.Errorf("/statusz = %s", body)
		}

		want := http.StatusNotFound
		if pprofOn {
			want = http.StatusOK
		}
		if code, _ := get(t, base+"/debug/pprof/"); code != want {
			t.Errorf("/debug/pprof/ with pprof %v: %d, want %d", pprofOn, code, want)
		}
		cancel()
	}
}
