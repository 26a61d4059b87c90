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

// ourCRDsOfAnOlderChart are the CRDs of config/crd/bases a chart from
// before the policy kinds installed.
var ourCRDsOfAnOlderChart = []string{
	"gateway.coxswain-labs.dev_coxswaingatewayparameters.yaml",
	"ingress.coxswain-labs.dev_coxswainingressclassparameters.yaml",
}

// copyCRDs copies files of dir src into dst.
func copyCRDs(t *testing.T, dst, src string, files []string) {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// providerRun is a Provider running against an envtest apiserver of its
// own, with a GatewayClass of ours.
type providerRun struct {
	ctx     context.Context
	client  client.Client
	p       *Provider
	results chan *translator.Result
	started chan error
}

// runProvider starts an apiserver serving the CRDs of crdDirs (nil: every
// CRD of ours and the Gateway API standard channel's), a cache and a
// Provider translating with translate (nil: translator.Translate).
func runProvider(t *testing.T, crdDirs []string, translate func(*translator.Resources) *translator.Result) *providerRun {
	t.Helper()
	api := &testkit.Envtest{}
	if crdDirs != nil {
		api.Adjust = func(env *envtest.Environment) error {
			env.CRDDirectoryPaths = crdDirs
			return nil
		}
	}
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
	t.Cleanup(cancel)
	gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "coxswain"}, Spec: gwv1.GatewayClassSpec{ControllerName: names.ControllerName}}
	if err := c.Create(ctx, gc); err != nil {
		t.Fatal(err)
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	run := &providerRun{ctx: ctx, client: c, results: make(chan *translator.Result, 8), started: make(chan error, 1)}
	run.p = New(Options{Cache: ca, InstallNamespace: "coxswain-system", Log: logr.Discard(), APIReader: c, Translate: translate,
		Sinks: []Sink{SinkFunc(func(_ context.Context, r *translator.Result) {
			select {
			case run.results <- r:
			default:
			}
		})}})
	go func() { run.started <- run.p.Start(ctx) }()
	return run
}

// next waits for the provider's next Result.
func (r *providerRun) next(t *testing.T) *translator.Result {
	t.Helper()
	select {
	case res := <-r.results:
		return res
	case err := <-r.started:
		t.Fatalf("the provider stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no rebuild within 30s")
	}
	return nil
}

// TestAbsentKindsShrinkFeatures runs the provider against a real
// apiserver that serves only olderGatewayAPI's kinds, standard channel, and
// only ourCRDsOfAnOlderChart of ours: it starts without an error, reads
// the missing kinds as empty, records the Gateway API ones, reads the
// channel off the HTTPRoute CRD, and the GatewayClass advertises none of
// the missing kinds' features nor the experimental-field ones. Our missing
// policy kinds read as empty and are no AbsentKinds.
func TestAbsentKindsShrinkFeatures(t *testing.T) {
	crds := t.TempDir()
	src, err := testkit.GatewayAPICRDDir()
	if err != nil {
		t.Fatal(err)
	}
	copyCRDs(t, crds, src, olderGatewayAPI)
	copyCRDs(t, crds, filepath.Join(testkit.RepoRoot(), "config", "crd", "bases"), ourCRDsOfAnOlderChart)
	run := runProvider(t, []string{crds}, nil)
	ctx, p := run.ctx, run.p
	res := run.next(t)
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
	for _, k := range []string{"HTTPRoute", "GRPCRoute", "ReferenceGrant", gatewayv1alpha1.KindRateLimit, gatewayv1alpha1.KindClientTrafficPolicy} {
		if slices.Contains(gathered.AbsentKinds, k) {
			t.Errorf("AbsentKinds %v has %s, which is served or not a Gateway API kind", gathered.AbsentKinds, k)
		}
	}
	if len(gathered.RateLimits)+len(gathered.ClientTrafficPolicies)+len(gathered.BackendPolicies) != 0 {
		t.Errorf("policies gathered without their CRDs: %+v", gathered)
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
