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
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
)

// ServiceRole is what a Service is to Coxswain.
type ServiceRole int

const (
	// ServiceBackend is a Service Coxswain did not render: a route backend.
	ServiceBackend ServiceRole = iota
	// ServiceDedicatedProxy is the Service of a Gateway's dedicated proxies,
	// in the Gateway's namespace.
	ServiceDedicatedProxy
	// ServiceSharedVIP is the VIP Service of a shared Gateway, in the install
	// namespace; its ports persist the Gateway's internal ports.
	ServiceSharedVIP
	// ServiceSharedProxy is the shared pool's public (Ingress) Service, in
	// the install namespace.
	ServiceSharedProxy
)

// ClassifyService tells, from the labels and names internal/provision
// renders, what s is to a controller installed in installNS.
func ClassifyService(installNS string, s *corev1.Service) ServiceRole {
	ours := s.Labels[names.LabelManagedBy] == names.ValueManagedBy
	component := s.Labels[names.LabelComponent]
	switch {
	case ours && component == names.ComponentDedicatedProxy:
		return ServiceDedicatedProxy
	case s.Namespace == installNS && ours && component == names.ComponentSharedVIP:
		return ServiceSharedVIP
	case s.Namespace == installNS && s.Name == names.SharedProxyServiceName:
		return ServiceSharedProxy
	}
	return ServiceBackend
}

// SetServices gives r every Service of the cluster (Services) and sorts
// Coxswain's own out of them by ClassifyService: DedicatedServices,
// SharedVIPServices, SharedProxyService, and the InternalPorts persisted in
// the VIP Services. internal/provider and the golden tests' loader both
// call it, so the goldens exercise production's classification.
func (r *Resources) SetServices(installNS string, services []*corev1.Service) {
	r.Services = services
	r.DedicatedServices, r.SharedVIPServices, r.SharedProxyService = nil, nil, nil
	for _, s := range services {
		if s == nil {
			continue
		}
		switch ClassifyService(installNS, s) {
		case ServiceDedicatedProxy:
			r.DedicatedServices = append(r.DedicatedServices, s)
		case ServiceSharedVIP:
			r.SharedVIPServices = append(r.SharedVIPServices, s)
		case ServiceSharedProxy:
			r.SharedProxyService = s
		}
	}
	r.InternalPorts = provision.AssignmentsFromVIPServices(r.SharedVIPServices)
}

// ServiceSorter is SetServices for the successive gathers of one caller.
// When a gather's Services are the very objects of the last one (an
// informer's store hands out the same object until it changes), it hands
// over the last sorting instead of reading every Service again: with a
// VIP Service per shared Gateway, reading their labels, annotations and
// ports was a tenth of a rebuild at 1,000 Gateways. Only objects that are
// never modified in place may be given to it, as an informer cache's
// are.
type ServiceSorter struct {
	mu        sync.Mutex
	installNS string
	// seen is the last gather's Services, by identity, and list that
	// gather's very list.
	seen map[*corev1.Service]struct{}
	list []*corev1.Service
	// sorted is the last sorting, on a Resources of its own.
	sorted Resources
}

// SetServices is r.SetServices(installNS, services), from the last
// sorting when services are the same objects as last time.
func (s *ServiceSorter) SetServices(r *Resources, installNS string, services []*corev1.Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil || s.installNS != installNS || !s.same(services) {
		s.sorted.SetServices(installNS, services)
		s.installNS = installNS
		s.seen = make(map[*corev1.Service]struct{}, len(services))
		for _, svc := range services {
			s.seen[svc] = struct{}{}
		}
	}
	s.list = services
	r.Services = services
	r.DedicatedServices, r.SharedVIPServices = s.sorted.DedicatedServices, s.sorted.SharedVIPServices
	r.SharedProxyService, r.InternalPorts = s.sorted.SharedProxyService, s.sorted.InternalPorts
}

// same reports whether services are the objects of the last sorting.
func (s *ServiceSorter) same(services []*corev1.Service) bool {
	if len(services) != len(s.seen) {
		return false
	}
	if len(services) > 0 && len(services) == len(s.list) && &services[0] == &s.list[0] {
		return true // the very list: a gather's lists are never changed in place
	}
	for _, svc := range services {
		if _, ok := s.seen[svc]; !ok {
			return false
		}
	}
	return true
}
