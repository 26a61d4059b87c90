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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The stream route kinds (TLSRoute, TCPRoute, UDPRoute) share one compiled
// form: compiledRoute with stream set instead of entries. They attach to
// listeners through the same attach code as HTTP routes (attach.go) and are
// emitted as snapshot.StreamRoutes (stream_listeners.go).

func tlsRouteParts(r *gwv1.TLSRoute) (*metav1.ObjectMeta, []gwv1.ParentReference) {
	return &r.ObjectMeta, r.Spec.ParentRefs
}

func tcpRouteParts(r *gwv1.TCPRoute) (*metav1.ObjectMeta, []gwv1.ParentReference) {
	return &r.ObjectMeta, r.Spec.ParentRefs
}

func udpRouteParts(r *gwv1.UDPRoute) (*metav1.ObjectMeta, []gwv1.ParentReference) {
	return &r.ObjectMeta, r.Spec.ParentRefs
}

func (t *translator) compileTLSRoute(r *gwv1.TLSRoute) *compiledRoute {
	rules := make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		rules[i] = r.Spec.Rules[i].BackendRefs
	}
	cr := t.compileStreamRoute(kindTLSRoute, &r.ObjectMeta, r.Spec.Hostnames, rules, corev1.ProtocolTCP)
	if len(r.Spec.Hostnames) == 0 {
		cr.fail("a TLSRoute needs at least one hostname")
	}
	return cr
}

func (t *translator) compileTCPRoute(r *gwv1.TCPRoute) *compiledRoute {
	rules := make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		rules[i] = r.Spec.Rules[i].BackendRefs
	}
	return t.compileStreamRoute(kindTCPRoute, &r.ObjectMeta, nil, rules, corev1.ProtocolTCP)
}

func (t *translator) compileUDPRoute(r *gwv1.UDPRoute) *compiledRoute {
	rules := make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		rules[i] = r.Spec.Rules[i].BackendRefs
	}
	return t.compileStreamRoute(kindUDPRoute, &r.ObjectMeta, nil, rules, corev1.ProtocolUDP)
}

// compileStreamRoute compiles the one rule of a stream route into weighted
// backends. A backendRef that does not resolve keeps its weight as an
// invalid backend, whose share of connections the proxy refuses (the spec:
// rejections respect weight), and sets ResolvedRefs=False.
func (t *translator) compileStreamRoute(kind string, meta *metav1.ObjectMeta, hostnames []gwv1.Hostname, rules [][]gwv1.BackendRef, proto corev1.Protocol) *compiledRoute {
	cr := newCompiledRoute(kind, meta, hostnames)
	if len(rules) != 1 {
		cr.fail("a %s has exactly one rule, not %d", kind, len(rules))
		return cr
	}
	sr := &snapshot.StreamRoute{ID: strings.ToLower(kind) + "/" + meta.Namespace + "/" + meta.Name + ":0"}
	for _, ref := range rules[0] {
		w := int32(1)
		if ref.Weight != nil {
			w = *ref.Weight
		}
		if w < 0 {
			cr.fail("backend weight %d is negative", w)
			continue
		}
		b := t.resolveStreamBackend(meta.Namespace, kind, ref.BackendObjectReference, proto)
		if b.reason != "" {
			cr.unresolved(b.reason, b.msg)
			if w > 0 {
				sr.Backends = append(sr.Backends, snapshot.Backend{Weight: w, Invalid: true})
			}
			continue
		}
		if w > 0 {
			sr.Backends = append(sr.Backends, snapshot.Backend{EndpointSet: b.set, Weight: w})
		}
	}
	cr.stream = sr
	return cr
}
