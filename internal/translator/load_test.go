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

package translator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
)

// Test input conventions (testdata/*.in.yaml):
//   - The controller is installed in goldenInstallNamespace. Services are
//     sorted as internal/provider sorts them (Resources.SetServices): the
//     shared pool's Service, the VIP Services (whose ports persist the
//     internal ports) and the dedicated Services carry the labels,
//     annotations and names internal/provision renders. Strict loading
//     rejects a Service that looks like Coxswain's but does not classify.
//   - Deployments are dedicated proxy Deployments and must carry the labels
//     provision renders (internal/provider lists only those).
//   - Secret stringData values TEST_CERT and TEST_KEY are replaced by
//     testdata/tls.crt and testdata/tls.key; stringData is merged into data
//     as the apiserver does. A ConfigMap data value TEST_CERT is replaced
//     by testdata/tls.crt too (a CA bundle).

// goldenInstallNamespace is the install namespace of every golden input.
const goldenInstallNamespace = "coxswain-system"

// loader collects what SetServices sorts once every document is read.
type loader struct {
	res      *Resources
	services []*corev1.Service
}

var testPEM = map[string][]byte{}

func testFile(name string) []byte {
	if b, ok := testPEM[name]; ok {
		return b
	}
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	testPEM[name] = b
	return b
}

// loadGolden reads and strictly loads the golden input file in.
func loadGolden(t testing.TB, in string) *Resources {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadResources(data, true)
	if err != nil {
		t.Fatalf("load %s: %v", in, err)
	}
	return res
}

// loadResources decodes multi-document YAML. strict rejects unknown
// fields and kinds (golden inputs); the fuzz test decodes leniently.
func loadResources(data []byte, strict bool) (*Resources, error) {
	in := &loader{res: &Resources{}}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if err := in.addDoc(doc, strict); err != nil {
			if strict {
				return nil, fmt.Errorf("document %d: %w", i, err)
			}
		}
	}
	in.res.SetServices(goldenInstallNamespace, in.services)
	return in.res, nil
}

// addDoc decodes one document into in. It is long because it is one switch
// with a short case per kind, clearer whole than split.
func (in *loader) addDoc(doc []byte, strict bool) error {
	res := in.res
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	un := func(v any) error {
		if strict {
			return yaml.UnmarshalStrict(doc, v)
		}
		return yaml.Unmarshal(doc, v)
	}
	switch tm.Kind {
	case "GatewayClass":
		o := &gwv1.GatewayClass{}
		if err := un(o); err != nil {
			return err
		}
		res.GatewayClasses = append(res.GatewayClasses, o)
	case "Gateway":
		o := &gwv1.Gateway{}
		if err := un(o); err != nil {
			return err
		}
		res.Gateways = append(res.Gateways, o)
	case "HTTPRoute":
		o := &gwv1.HTTPRoute{}
		if err := un(o); err != nil {
			return err
		}
		res.HTTPRoutes = append(res.HTTPRoutes, o)
	case "GRPCRoute":
		o := &gwv1.GRPCRoute{}
		if err := un(o); err != nil {
			return err
		}
		res.GRPCRoutes = append(res.GRPCRoutes, o)
	case "TLSRoute":
		o := &gwv1.TLSRoute{}
		if err := un(o); err != nil {
			return err
		}
		res.TLSRoutes = append(res.TLSRoutes, o)
	case "TCPRoute":
		o := &gwv1.TCPRoute{}
		if err := un(o); err != nil {
			return err
		}
		res.TCPRoutes = append(res.TCPRoutes, o)
	case "UDPRoute":
		o := &gwv1.UDPRoute{}
		if err := un(o); err != nil {
			return err
		}
		res.UDPRoutes = append(res.UDPRoutes, o)
	case "ListenerSet":
		o := &gwv1.ListenerSet{}
		if err := un(o); err != nil {
			return err
		}
		res.ListenerSets = append(res.ListenerSets, o)
	case "ReferenceGrant":
		o := &gwv1beta1.ReferenceGrant{}
		if err := un(o); err != nil {
			return err
		}
		res.ReferenceGrants = append(res.ReferenceGrants, o)
	case "Namespace":
		o := &corev1.Namespace{}
		if err := un(o); err != nil {
			return err
		}
		res.Namespaces = append(res.Namespaces, o)
	case "Service":
		o := &corev1.Service{}
		if err := un(o); err != nil {
			return err
		}
		if err := checkGoldenService(o); strict && err != nil {
			return err
		}
		in.services = append(in.services, o)
	case "EndpointSlice":
		o := &discoveryv1.EndpointSlice{}
		if err := un(o); err != nil {
			return err
		}
		res.EndpointSlices = append(res.EndpointSlices, o)
	case "Secret":
		o := &corev1.Secret{}
		if err := un(o); err != nil {
			return err
		}
		for k, v := range o.StringData {
			switch strings.TrimSpace(v) {
			case "TEST_CERT":
				v = string(testFile("tls.crt"))
			case "TEST_KEY":
				v = string(testFile("tls.key"))
			}
			if o.Data == nil {
				o.Data = map[string][]byte{}
			}
			o.Data[k] = []byte(v)
		}
		o.StringData = nil
		res.Secrets = append(res.Secrets, o)
	case "ConfigMap":
		o := &corev1.ConfigMap{}
		if err := un(o); err != nil {
			return err
		}
		for k, v := range o.Data {
			if strings.TrimSpace(v) == "TEST_CERT" {
				o.Data[k] = string(testFile("tls.crt"))
			}
		}
		res.ConfigMaps = append(res.ConfigMaps, o)
	case "BackendTLSPolicy":
		o := &gwv1.BackendTLSPolicy{}
		if err := un(o); err != nil {
			return err
		}
		res.BackendTLSPolicies = append(res.BackendTLSPolicies, o)
	case "Ingress":
		o := &networkingv1.Ingress{}
		if err := un(o); err != nil {
			return err
		}
		res.Ingresses = append(res.Ingresses, o)
	case "IngressClass":
		o := &networkingv1.IngressClass{}
		if err := un(o); err != nil {
			return err
		}
		res.IngressClasses = append(res.IngressClasses, o)
	case "CoxswainIngressClassParameters":
		o := &ingressv1alpha1.CoxswainIngressClassParameters{}
		if err := un(o); err != nil {
			return err
		}
		res.IngressClassParameters = append(res.IngressClassParameters, o)
	case "CoxswainGatewayParameters":
		o := &gatewayv1alpha1.CoxswainGatewayParameters{}
		if err := un(o); err != nil {
			return err
		}
		res.GatewayParameters = append(res.GatewayParameters, o)
	case "Deployment":
		o := &appsv1.Deployment{}
		if err := un(o); err != nil {
			return err
		}
		if !labels.SelectorFromSet(names.DedicatedProxySelector()).Matches(labels.Set(o.Labels)) {
			// internal/provider lists only dedicated proxy Deployments.
			return fmt.Errorf("golden Deployment %s/%s lacks the dedicated proxy labels %v", o.Namespace, o.Name, names.DedicatedProxySelector())
		}
		res.DedicatedDeployments = append(res.DedicatedDeployments, o)
	default:
		if add := policyLoaders(res)[tm.Kind]; add != nil {
			return add(un)
		}
		return fmt.Errorf("unknown kind %q", tm.Kind)
	}
	return nil
}

// policyLoaders append a policy object of each of our policy kinds to res.
func policyLoaders(res *Resources) map[string]func(func(any) error) error {
	return map[string]func(func(any) error) error{
		gatewayv1alpha1.KindIPAccessControl:     loadInto(&res.IPAccessControls),
		gatewayv1alpha1.KindRateLimit:           loadInto(&res.RateLimits),
		gatewayv1alpha1.KindBasicAuth:           loadInto(&res.BasicAuths),
		gatewayv1alpha1.KindJWTAuth:             loadInto(&res.JWTAuths),
		gatewayv1alpha1.KindExternalAuth:        loadInto(&res.ExternalAuths),
		gatewayv1alpha1.KindCompression:         loadInto(&res.Compressions),
		gatewayv1alpha1.KindRequestSizeLimit:    loadInto(&res.RequestSizeLimits),
		gatewayv1alpha1.KindPathRewriteRegex:    loadInto(&res.PathRewriteRegexes),
		gatewayv1alpha1.KindRetryPolicy:         loadInto(&res.RetryPolicies),
		gatewayv1alpha1.KindBackendPolicy:       loadInto(&res.BackendPolicies),
		gatewayv1alpha1.KindClientTrafficPolicy: loadInto(&res.ClientTrafficPolicies),
	}
}

func loadInto[T any](dst *[]*T) func(func(any) error) error {
	return func(un func(any) error) error {
		o := new(T)
		if err := un(o); err != nil {
			return err
		}
		*dst = append(*dst, o)
		return nil
	}
}

// checkGoldenService rejects a Service that looks like one Coxswain renders
// (in the install namespace, or carrying Coxswain's managed-by or a
// component label) but that production's ClassifyService does not
// recognise: a golden written with other labels than provision renders
// would test a classification production never makes.
func checkGoldenService(s *corev1.Service) error {
	if ClassifyService(goldenInstallNamespace, s) != ServiceBackend {
		return nil
	}
	_, component := s.Labels[names.LabelComponent]
	if s.Namespace == goldenInstallNamespace || component || s.Labels[names.LabelManagedBy] == names.ValueManagedBy {
		return fmt.Errorf("golden Service %s/%s looks like one Coxswain renders but does not classify as one; give it the labels internal/provision renders (internal/names)", s.Namespace, s.Name)
	}
	return nil
}
