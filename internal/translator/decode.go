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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
)

// DecodeOptions tune Decode.
type DecodeOptions struct {
	// Strict rejects unknown fields and kinds Translate does not read;
	// otherwise they are skipped.
	Strict bool
	// InstallNamespace is where the controller would run: it sorts the
	// shared pool's and the VIP Services out of the others
	// (Resources.SetServices).
	InstallNamespace string
	// Check, when set, sees every decoded object before it is added (it
	// may change it, e.g. fill in test data); an error rejects the
	// document.
	Check func(obj any) error
}

// Decode reads a stream of YAML (or JSON) documents into the Resources
// Translate reads, as internal/provider would gather them from a cluster:
// a Secret's stringData merged into its data, Services sorted by
// SetServices. `coxswain translate` and the golden tests use it.
func Decode(data []byte, o DecodeOptions) (*Resources, error) {
	res := &Resources{}
	var services []*corev1.Service
	adders := decoders(res, &services)
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
		if err := decodeDoc(doc, o, adders); err != nil && o.Strict {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
	}
	res.SetServices(o.InstallNamespace, services)
	return res, nil
}

// decoder decodes one document of a kind and adds it to a Resources.
type decoder func(un func(any) error, check func(any) error) error

func decodeDoc(doc []byte, o DecodeOptions, adders map[string]decoder) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	add := adders[tm.Kind]
	if add == nil {
		return fmt.Errorf("unknown kind %q", tm.Kind)
	}
	un := func(v any) error {
		if o.Strict {
			return yaml.UnmarshalStrict(doc, v)
		}
		return yaml.Unmarshal(doc, v)
	}
	check := o.Check
	if check == nil {
		check = func(any) error { return nil }
	}
	return add(un, check)
}

// decoders are the kinds Decode reads, each appending to its field of res.
func decoders(res *Resources, services *[]*corev1.Service) map[string]decoder {
	return map[string]decoder{
		"GatewayClass":                          into(&res.GatewayClasses, nil),
		"Gateway":                               into(&res.Gateways, nil),
		"HTTPRoute":                             into(&res.HTTPRoutes, nil),
		"GRPCRoute":                             into(&res.GRPCRoutes, nil),
		"TLSRoute":                              into(&res.TLSRoutes, nil),
		"TCPRoute":                              into(&res.TCPRoutes, nil),
		"UDPRoute":                              into(&res.UDPRoutes, nil),
		"ListenerSet":                           into(&res.ListenerSets, nil),
		"ReferenceGrant":                        into(&res.ReferenceGrants, nil),
		"BackendTLSPolicy":                      into(&res.BackendTLSPolicies, nil),
		"Namespace":                             into(&res.Namespaces, nil),
		"Service":                               into(services, nil),
		"EndpointSlice":                         into(&res.EndpointSlices, nil),
		"Secret":                                into(&res.Secrets, mergeStringData),
		"ConfigMap":                             into(&res.ConfigMaps, nil),
		"Ingress":                               into(&res.Ingresses, nil),
		"IngressClass":                          into(&res.IngressClasses, nil),
		"CoxswainIngressClassParameters":        into(&res.IngressClassParameters, nil),
		"CoxswainGatewayParameters":             into(&res.GatewayParameters, nil),
		"Deployment":                            into(&res.DedicatedDeployments, nil),
		gatewayv1alpha1.KindIPAccessControl:     into(&res.IPAccessControls, nil),
		gatewayv1alpha1.KindRateLimit:           into(&res.RateLimits, nil),
		gatewayv1alpha1.KindBasicAuth:           into(&res.BasicAuths, nil),
		gatewayv1alpha1.KindJWTAuth:             into(&res.JWTAuths, nil),
		gatewayv1alpha1.KindExternalAuth:        into(&res.ExternalAuths, nil),
		gatewayv1alpha1.KindCompression:         into(&res.Compressions, nil),
		gatewayv1alpha1.KindRequestSizeLimit:    into(&res.RequestSizeLimits, nil),
		gatewayv1alpha1.KindPathRewriteRegex:    into(&res.PathRewriteRegexes, nil),
		gatewayv1alpha1.KindRetryPolicy:         into(&res.RetryPolicies, nil),
		gatewayv1alpha1.KindBackendPolicy:       into(&res.BackendPolicies, nil),
		gatewayv1alpha1.KindClientTrafficPolicy: into(&res.ClientTrafficPolicies, nil),
	}
}

// into decodes a *T, lets check see it, applies fix (may be nil) and
// appends it to dst.
func into[T any](dst *[]*T, fix func(*T)) decoder {
	return func(un func(any) error, check func(any) error) error {
		o := new(T)
		if err := un(o); err != nil {
			return err
		}
		if err := check(o); err != nil {
			return err
		}
		if fix != nil {
			fix(o)
		}
		*dst = append(*dst, o)
		return nil
	}
}

// mergeStringData merges a Secret's stringData into its data, as the
// apiserver does on write.
func mergeStringData(s *corev1.Secret) {
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}
