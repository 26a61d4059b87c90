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

// Package describe explains in plain words how Coxswain sees a Gateway,
// an HTTPRoute or an Ingress: accepted or not and why, the listeners and
// hostnames, the backends and their ready endpoints, and the recent
// Events, from the objects' status as the controller wrote it. It only
// reads. `coxswain describe` (also `kubectl coxswain describe`) prints
// its Report and exits non-zero when the Report found a problem.
package describe

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Report is what describe found: lines to print, and how many of them are
// problems.
type Report struct {
	Lines    []string
	Problems int
}

func (r *Report) say(indent int, format string, args ...any) {
	r.Lines = append(r.Lines, strings.Repeat("  ", indent)+fmt.Sprintf(format, args...))
}

func (r *Report) problem(indent int, format string, args ...any) {
	r.Problems++
	r.say(indent, "PROBLEM: "+format, args...)
}

// WriteTo prints the report.
func (r *Report) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, l := range r.Lines {
		m, err := fmt.Fprintln(w, l)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// conditions says each condition, a False one (or a True Conflicted) as
// a problem.
func (r *Report) conditions(indent int, conds []metav1.Condition) {
	for _, c := range conds {
		bad := c.Status == metav1.ConditionFalse
		if c.Type == string(gwv1.ListenerConditionConflicted) {
			bad = c.Status == metav1.ConditionTrue
		}
		if bad {
			r.problem(indent, "%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
		} else {
			r.say(indent, "%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
}

// Gateway describes the Gateway ns/name.
func Gateway(ctx context.Context, c client.Reader, ns, name string) (*Report, error) {
	gw := &gwv1.Gateway{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gw); err != nil {
		return nil, err
	}
	r := &Report{}
	r.say(0, "Gateway %s/%s (class %s, generation %d)", ns, name, gw.Spec.GatewayClassName, gw.Generation)
	r.conditions(1, gw.Status.Conditions)
	if len(gw.Status.Conditions) == 0 {
		r.problem(1, "no status yet: is the GatewayClass %s ours (controller %s) and the controller running?", gw.Spec.GatewayClassName, names.ControllerName)
	}
	for _, a := range gw.Status.Addresses {
		r.say(1, "address %s", a.Value)
	}
	byName := map[gwv1.SectionName]gwv1.ListenerStatus{}
	for _, l := range gw.Status.Listeners {
		byName[l.Name] = l
	}
	for _, l := range gw.Spec.Listeners {
		host := "*"
		if l.Hostname != nil {
			host = string(*l.Hostname)
		}
		ls, ok := byName[l.Name]
		r.say(1, "listener %s: %s port %d, hostname %s, %d routes attached", l.Name, l.Protocol, l.Port, host, ls.AttachedRoutes)
		if !ok {
			r.problem(2, "no listener status yet")
			continue
		}
		r.conditions(2, ls.Conditions)
	}
	routes := &gwv1.HTTPRouteList{}
	if err := c.List(ctx, routes); err != nil {
		return nil, err
	}
	for _, rt := range routes.Items {
		for _, p := range rt.Status.Parents {
			pns := rt.Namespace
			if p.ParentRef.Namespace != nil {
				pns = string(*p.ParentRef.Namespace)
			}
			if string(p.ControllerName) != names.ControllerName || pns != ns || string(p.ParentRef.Name) != name {
				continue
			}
			r.say(1, "HTTPRoute %s/%s (hostnames %v)", rt.Namespace, rt.Name, rt.Spec.Hostnames)
			r.conditions(2, p.Conditions)
		}
	}
	return r, r.events(ctx, c, "Gateway", ns, name)
}

// HTTPRoute describes the HTTPRoute ns/name.
func HTTPRoute(ctx context.Context, c client.Reader, ns, name string) (*Report, error) {
	rt := &gwv1.HTTPRoute{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rt); err != nil {
		return nil, err
	}
	r := &Report{}
	r.say(0, "HTTPRoute %s/%s (generation %d, hostnames %v)", ns, name, rt.Generation, rt.Spec.Hostnames)
	ours := 0
	for _, p := range rt.Status.Parents {
		if string(p.ControllerName) != names.ControllerName {
			continue
		}
		ours++
		section := ""
		if p.ParentRef.SectionName != nil {
			section = " listener " + string(*p.ParentRef.SectionName)
		}
		r.say(1, "parent Gateway %s%s", p.ParentRef.Name, section)
		r.conditions(2, p.Conditions)
	}
	if ours == 0 {
		r.problem(1, "no parent status from %s: do its parentRefs name a Gateway of a coxswain GatewayClass?", names.ControllerName)
	}
	for i, rule := range rt.Spec.Rules {
		label := fmt.Sprintf("rule %d", i)
		if rule.Name != nil {
			label += " (" + string(*rule.Name) + ")"
		}
		r.say(1, "%s", label)
		for _, b := range rule.BackendRefs {
			if err := r.backend(ctx, c, 2, ns, b.BackendObjectReference); err != nil {
				return nil, err
			}
		}
	}
	return r, r.events(ctx, c, "HTTPRoute", ns, name)
}

// Ingress describes the Ingress ns/name.
func Ingress(ctx context.Context, c client.Reader, ns, name string) (*Report, error) {
	ing := &networkingv1.Ingress{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ing); err != nil {
		return nil, err
	}
	r := &Report{}
	class := "<default>"
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	r.say(0, "Ingress %s/%s (class %s)", ns, name, class)
	if len(ing.Status.LoadBalancer.Ingress) == 0 {
		r.problem(1, "no load balancer address in status: is the IngressClass ours and the shared proxy Service up?")
	}
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		r.say(1, "address %s%s", lb.IP, lb.Hostname)
	}
	for _, tl := range ing.Spec.TLS {
		r.say(1, "TLS %v from Secret %s", tl.Hosts, tl.SecretName)
	}
	for _, rule := range ing.Spec.Rules {
		host := rule.Host
		if host == "" {
			host = "*"
		}
		if rule.HTTP == nil {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			r.say(1, "host %s path %s", host, p.Path)
			if s := p.Backend.Service; s != nil {
				port := gwv1.PortNumber(s.Port.Number)
				if err := r.backend(ctx, c, 2, ns, gwv1.BackendObjectReference{Name: gwv1.ObjectName(s.Name), Port: &port}); err != nil {
					return nil, err
				}
			}
		}
	}
	return r, r.events(ctx, c, "Ingress", ns, name)
}

// backend says whether a Service backend exists and how many endpoints of
// it are ready.
func (r *Report) backend(ctx context.Context, c client.Reader, indent int, fromNS string, ref gwv1.BackendObjectReference) error {
	ns := fromNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Service") {
		r.say(indent, "backend %s (not a Service)", ref.Name)
		return nil
	}
	port := ""
	if ref.Port != nil {
		port = fmt.Sprintf(":%d", *ref.Port)
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, svc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.problem(indent, "backend Service %s/%s%s does not exist", ns, ref.Name, port)
			return nil
		}
		return err
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: string(ref.Name)}); err != nil {
		return err
	}
	ready := 0
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready += len(e.Addresses)
			}
		}
	}
	if ready == 0 {
		r.problem(indent, "backend Service %s/%s%s has no ready endpoints: requests get 503", ns, ref.Name, port)
		return nil
	}
	r.say(indent, "backend Service %s/%s%s: %d ready endpoints", ns, ref.Name, port, ready)
	return nil
}

// events says the object's recent Events, Warnings as problems.
func (r *Report) events(ctx context.Context, c client.Reader, kind, ns, name string) error {
	evs := &corev1.EventList{}
	if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
		return err
	}
	var mine []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			mine = append(mine, e)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].LastTimestamp.Before(&mine[j].LastTimestamp) })
	for _, e := range mine {
		if e.Type == corev1.EventTypeWarning {
			r.problem(1, "event %s: %s", e.Reason, e.Message)
		} else {
			r.say(1, "event %s: %s", e.Reason, e.Message)
		}
	}
	return nil
}
