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

package provider

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// olderGatewayAPI are the standard-channel CRDs of a Gateway API before
// v1.5: no TLSRoute, TCPRoute, UDPRoute or ListenerSet at v1, and (as
// before v1.4) no BackendTLSPolicy.
var olderGatewayAPI = []string{
	"gateway.networking.k8s.io_gatewayclasses.yaml",
	"gateway.networking.k8s.io_gateways.yaml",
	"gateway.networking.k8s.io_httproutes.yaml",
	"gateway.networking.k8s.io_grpcroutes.yaml",
	"gateway.networking.k8s.io_referencegrants.yaml",
}

// TestAbsentKindsShrinkFeatures runs the provider against a real
// apiserver that serves only olderGatewayAPI's kinds, standard channel: it
// starts without an error, reads the missing kinds as empty, records them,
// reads the channel off the HTTPRoute CRD, and the GatewayClass advertises
// none of the missing kinds' features nor the experimental-field ones.
func TestAbsentKindsShrinkFeatures(t *testing.T) {
	crds := t.TempDir()
	src, err := testkit.GatewayAPICRDDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range olderGatewayAPI {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crds, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api := &testkit.Envtest{Adjust: func(env *envtest.Environment) error {
		env.CRDDirectoryPaths = []string{crds, filepath.Join(testkit.RepoRoot(), "config", "crd", "bases")}
		return nil
	}}
	t.Cleanup(func() {
		if err := api.Stop(); err != nil {
			t.Error(err)
		}
	})
	cfg := api.Config(t)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, gwv1.Install, gwv1beta1.Install, gatewayv1alpha1.AddToScheme, ingressv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "coxswain"}, Spec: gwv1.GatewayClassSpec{ControllerName: names.ControllerName}}
	if err := c.Create(ctx, gc); err != nil {
		t.Fatal(err)
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	results := make(chan *translator.Result, 8)
	p := New(Options{Cache: ca, InstallNamespace: "coxswain-system", Log: logr.Discard(), APIReader: c,
		Sinks: []Sink{SinkFunc(func(_ context.Context, r *translator.Result) {
			select {
			case results <- r:
			default:
			}
		})}})
	started := make(chan error, 1)
	go func() { started <- p.Start(ctx) }()
	var res *translator.Result
	select {
	case res = <-results:
	case err := <-started:
		t.Fatalf("the provider stopped before its first rebuild: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no rebuild within 30s")
	}
	gathered, err := p.Gather(ctx)
	if err != nil {
		t.Fatalf("Gather with kinds missing: %v", err)
	}
	if gathered.GatewayAPIChannel != "standard" {
		t.Errorf("GatewayAPIChannel = %q, want standard (the HTTPRoute CRD's annotation)", gathered.GatewayAPIChannel)
	}
	for _, k := range []string{"TLSRoute", "TCPRoute", "UDPRoute", "ListenerSet", "BackendTLSPolicy"} {
		if !slices.Contains(gathered.AbsentKinds, k) {
			t.Errorf("AbsentKinds %v lacks %s", gathered.AbsentKinds, k)
		}
	}
	for _, k := range []string{"HTTPRoute", "GRPCRoute", "ReferenceGrant"} {
		if slices.Contains(gathered.AbsentKinds, k) {
			t.Errorf("AbsentKinds %v has %s, which the cluster serves", gathered.AbsentKinds, k)
		}
	}
	if len(res.GatewayClasses) != 1 {
		t.Fatalf("GatewayClass statuses: %+v", res.GatewayClasses)
	}
	var got []string
	for _, f := range res.GatewayClasses[0].Status.SupportedFeatures {
		got = append(got, string(f.Name))
	}
	for _, gone := range []string{"TLSRoute", "TLSRouteModeTerminate", "TCPRoute", "UDPRoute", "ListenerSet", "BackendTLSPolicy", "BackendTLSPolicySANValidation", "HTTPRouteRetry"} {
		if slices.Contains(got, gone) {
			t.Errorf("supportedFeatures %v advertises %s without its kind", got, gone)
		}
	}
	for _, kept := range []string{"HTTPRoute", "GRPCRoute", "ReferenceGrant", "Gateway"} {
		if !slices.Contains(got, kept) {
			t.Errorf("supportedFeatures %v lacks %s", got, kept)
		}
	}
}
