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
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// A cluster has a Service and an EndpointSlice or more for every
// workload. As the endpointslice controller writes a slice, each endpoint
// names its Pod, node and zone, and the slice carries its Service's
// labels, an owner reference and a trigger-time annotation; a Service
// carries its selector, cluster IPs, IP families and whatever labels and
// annotations its chart gave it. Translate reads none of these, and the
// controller's cache need not keep them: LeanEndpointSlice and
// LeanBackendService cut an object to what Translate reads, and
// TestLeanBackendsTranslateAlike holds them to it (every golden input
// translates to the same Result cut or whole).

// LeanEndpointSlice cuts s to what Translate reads of it: its name,
// namespace and versions, its Service's name label, its address type and
// ports, and each endpoint's addresses and conditions.
func LeanEndpointSlice(s *discoveryv1.EndpointSlice) {
	var labels map[string]string
	if svc, ok := s.Labels[discoveryv1.LabelServiceName]; ok {
		labels = map[string]string{discoveryv1.LabelServiceName: svc}
	}
	s.Labels, s.Annotations, s.OwnerReferences, s.GenerateName = labels, nil, nil, ""
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		e.Hostname, e.TargetRef, e.NodeName, e.Zone, e.Hints, e.DeprecatedTopology = nil, nil, nil, nil, nil, nil
	}
}

// LeanBackendService cuts s, a Service ClassifyService finds to be only a
// backend, to what Translate reads of such a Service: its name,
// namespace and versions, and its spec's ports (its type, cluster IP and
// external name kept too, small as they are). Its owner references stay:
// the dedicated reconciler reads from them whose a Service is.
func LeanBackendService(s *corev1.Service) {
	spec := s.Spec
	s.Labels, s.Annotations, s.GenerateName = nil, nil, ""
	s.Spec = corev1.ServiceSpec{Type: spec.Type, Ports: spec.Ports, ClusterIP: spec.ClusterIP, ExternalName: spec.ExternalName}
	s.Status = corev1.ServiceStatus{}
}
