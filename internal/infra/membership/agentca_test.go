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

package membership

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// brokenCA passes the CRD's "starts with a PEM header" rule but holds no
// certificate: the first is not base64, the second decodes to three bytes
// that are not a certificate (AppendCertsFromPEM skips such a block and
// keeps the good ones silently).
var brokenCAs = map[string]func() string{
	"not base64":         func() string { return "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n" },
	"valid then garbage": func() string { return pem("CA1") + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
}

// TestInvalidAgentCARefused: a validly signed Project whose agent CA does
// not parse is refused visibly (event, metric, log): not served on first
// sight, and a change to it keeps the accepted CA.
func TestInvalidAgentCARefused(t *testing.T) {
	for name, broken := range brokenCAs {
		t.Run(name, func(t *testing.T) {
			shard := uuid.NewString()
			rec := newRecorder()
			log, lines := captureLog(t)
			c, err := New(Config{ShardID: shard, RESTConfig: cfg, Keys: keys, OnEvent: rec.on, Log: log})
			if err != nil {
				t.Fatal(err)
			}
			start(t, c)
			testkit.EventuallyWithin(t, waitFor, "first list", c.Ready)
			metric := c.cfg.Metrics.TrustRefused.WithLabelValues("invalid_agent_ca")

			bad := project(shard, "bad.svc:443")
			bad.Spec.AgentCA.Certificates = broken()
			create(t, bad, t0)
			ev := rec.expect(t, TrustRefused, bad.Name)
			if !errors.Is(ev.Err, trust.ErrInvalidAgentCA) {
				t.Fatalf("refusal %v, want ErrInvalidAgentCA", ev.Err)
			}
			if _, ok := c.Get(bad.Name); ok {
				t.Fatal("project with an invalid agent CA joined the membership")
			}
			if value(metric) != 1 {
				t.Fatalf("invalid_agent_ca refusals %v, want 1", value(metric))
			}
			if !lines.has("refusing", bad.Name, `"reason"="invalid_agent_ca"`) {
				t.Fatal("refusal not logged")
			}

			good := create(t, project(shard, "good.svc:443"), t0)
			rec.expect(t, Added, good.Name)
			update(t, good.Name, func(p *infrav1alpha1.Project) {
				p.Spec.AgentCA.Certificates = broken()
				sign(t, p, signer, t0.Add(time.Hour))
			})
			ev = rec.expect(t, TrustRefused, good.Name)
			if !errors.Is(ev.Err, trust.ErrInvalidAgentCA) {
				t.Fatalf("refusal %v, want ErrInvalidAgentCA", ev.Err)
			}
			if m, _ := c.Get(good.Name); m.Certificates != pem("CA1") {
				t.Fatalf("invalid agent CA replaced the accepted one: %q", m.Certificates)
			}
			if value(metric) != 2 {
				t.Fatalf("invalid_agent_ca refusals %v, want 2", value(metric))
			}
		})
	}
}

// TestInvalidAgentCASeedDropped: a snapshot entry with an unparseable agent
// CA is not served, even with a valid signature.
func TestInvalidAgentCASeedDropped(t *testing.T) {
	shard := uuid.NewString()
	p := project(shard, "seed.svc:443")
	p.Spec.AgentCA.Certificates = brokenCAs["valid then garbage"]()
	sign(t, p, signer, t0)
	c, err := New(Config{ShardID: shard, RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Keys: keys,
		Seed: []Member{{Name: p.Name, ShardID: shard, APIServerEndpoint: p.Spec.APIServerEndpoint,
			Certificates: p.Spec.AgentCA.Certificates, TrustSignature: p.Spec.TrustSignature}}})
	if err != nil {
		t.Fatal(err)
	}
	if ms := c.Members(); len(ms) != 0 {
		t.Fatalf("seed with an invalid agent CA served: %+v", ms)
	}
}
