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

package pipeline

import (
	"context"
	"testing"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// Publishing a rebuild's snapshots is a "publish" span of the global
// provider counting them, an Error when the discovery server refuses one.
// (A plain test: it needs no API server, so the envtest suite does not
// start for it.)
func TestPublishSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	td := spiffeid.RequireTrustDomainFromString("coxswain.test")
	// The server is never started: Publish needs no certificates.
	srv, err := discovery.NewServer(discovery.ServerOptions{TrustDomain: td, SVID: &x509svid.SVID{}, Bundle: x509bundle.New(td), IsLeader: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	pub := publisher{srv}
	shared := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
	pub.Accept(context.Background(), &translator.Result{Snapshots: []*snapshot.Snapshot{shared}})
	pub.Accept(context.Background(), &translator.Result{Snapshots: []*snapshot.Snapshot{shared, shared}}) // one scope twice: refused
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("ended %d spans, want 2", len(ended))
	}
	for i, want := range []struct {
		snapshots int
		code      codes.Code
	}{{1, codes.Unset}, {2, codes.Error}} {
		s := ended[i]
		if s.Name() != "publish" || s.Status().Code != want.code {
			t.Errorf("span %d: %q status %v, want publish with %v", i, s.Name(), s.Status(), want.code)
		}
		if got := s.Attributes(); len(got) != 1 || got[0] != attribute.Int("coxswain.snapshots", want.snapshots) {
			t.Errorf("span %d attributes %v, want coxswain.snapshots=%d", i, got, want.snapshots)
		}
	}
}
