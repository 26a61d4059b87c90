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
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
)

// index is the lookup tables of one translation, built once.
type index struct {
	nsLabels   map[string]map[string]string
	services   map[nn]*corev1.Service
	slices     map[nn][]*discoveryv1.EndpointSlice
	secrets    map[nn]*corev1.Secret
	configMaps map[nn]*corev1.ConfigMap
	grants     map[string][]*gwv1beta1.ReferenceGrant
	gwParams   map[nn]*gatewayv1alpha1.CoxswainGatewayParameters
	icParams   map[nn]*ingressv1alpha1.CoxswainIngressClassParameters
	dedDeploy  map[nn]*appsv1.Deployment
	dedSvc     map[nn]*corev1.Service
	vip        map[nn]*corev1.Service
}

// buildIndex indexes res by the keys the translation looks objects up by,
// its EndpointSlices into slices, an empty map (nil: a new one).
func buildIndex(res *Resources, slices map[nn][]*discoveryv1.EndpointSlice) *index {
	ix := buildEnvIndex(res)
	ix.indexSlices(res.EndpointSlices, slices)
	return ix
}

// withSlices is a copy of ix, an index of an environment equal to res's
// (envDigest), with res's EndpointSlices indexed: at 1,000 Gateways,
// indexing their VIP Services and every other object again was a tenth of
// a translation that changed one route.
func (ix *index) withSlices(res *Resources, into map[nn][]*discoveryv1.EndpointSlice) *index {
	out := *ix
	out.indexSlices(res.EndpointSlices, into)
	return &out
}

// indexSlices indexes EndpointSlices by their Service, into into, an
// empty map (nil: a new one).
func (ix *index) indexSlices(list []*discoveryv1.EndpointSlice, into map[nn][]*discoveryv1.EndpointSlice) {
	if into == nil {
		into = make(map[nn][]*discoveryv1.EndpointSlice, len(list))
	}
	ix.slices = into
	for _, s := range list {
		if s == nil {
			continue
		}
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		k := nn{Namespace: s.Namespace, Name: svc}
		ix.slices[k] = append(ix.slices[k], s)
	}
	for _, list := range ix.slices {
		if len(list) > 1 {
			slices.SortFunc(list, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
		}
	}
}

// buildEnvIndex indexes every input of res that envDigest covers (all but
// the EndpointSlices).
func buildEnvIndex(res *Resources) *index {
	ix := &index{
		nsLabels:   map[string]map[string]string{},
		services:   make(map[nn]*corev1.Service, len(res.Services)),
		secrets:    map[nn]*corev1.Secret{},
		configMaps: map[nn]*corev1.ConfigMap{},
		grants:     map[string][]*gwv1beta1.ReferenceGrant{},
		gwParams:   map[nn]*gatewayv1alpha1.CoxswainGatewayParameters{},
		icParams:   map[nn]*ingressv1alpha1.CoxswainIngressClassParameters{},
		dedDeploy:  map[nn]*appsv1.Deployment{},
		dedSvc:     map[nn]*corev1.Service{},
		vip:        map[nn]*corev1.Service{},
	}
	for _, n := range res.Namespaces {
		if n != nil {
			ix.nsLabels[n.Name] = n.Labels
		}
	}
	for _, s := range res.Services {
		if s != nil {
			ix.services[key(&s.ObjectMeta)] = s
		}
	}
	for _, s := range res.Secrets {
		if s != nil {
			ix.secrets[key(&s.ObjectMeta)] = s
		}
	}
	for _, c := range res.ConfigMaps {
		if c != nil {
			ix.configMaps[key(&c.ObjectMeta)] = c
		}
	}
	for _, g := range res.ReferenceGrants {
		if g != nil {
			ix.grants[g.Namespace] = append(ix.grants[g.Namespace], g)
		}
	}
	for _, p := range res.GatewayParameters {
		if p != nil {
			ix.gwParams[key(&p.ObjectMeta)] = p
		}
	}
	for _, p := range res.IngressClassParameters {
		if p != nil {
			ix.icParams[key(&p.ObjectMeta)] = p
		}
	}
	for _, d := range res.DedicatedDeployments {
		if d != nil {
			ix.dedDeploy[key(&d.ObjectMeta)] = d
		}
	}
	for _, s := range res.DedicatedServices {
		if s != nil {
			ix.dedSvc[key(&s.ObjectMeta)] = s
		}
	}
	ix.addVIPServices(res.SharedVIPServices)
	return ix
}

// addVIPServices indexes the shared VIP Services by their Gateway; of two
// for one Gateway, the first by name.
func (ix *index) addVIPServices(svcs []*corev1.Service) {
	for _, s := range svcs {
		if s == nil {
			continue
		}
		k, ok := vipGateway(s)
		if !ok {
			continue
		}
		if prev, ok := ix.vip[k]; !ok || s.Name < prev.Name {
			ix.vip[k] = s
		}
	}
}

// vipGateway names the Gateway a shared VIP Service belongs to, read as
// provision.AssignmentsFromVIPServices reads it: from names.AnnotationGateway,
// else from the labels. The labels alone cannot name a Gateway whose name
// is over 63 characters: the label value is then hashed (names.LabelValue).
func vipGateway(s *corev1.Service) (nn, bool) {
	if ns, name, ok := strings.Cut(s.Annotations[names.AnnotationGateway], "/"); ok && ns != "" && name != "" {
		return nn{Namespace: ns, Name: name}, true
	}
	name, ns := s.Labels[names.LabelGatewayName], s.Labels[names.LabelGatewayNamespace]
	return nn{Namespace: ns, Name: name}, name != "" && ns != ""
}
