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
	"crypto/tls"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

type classInfo struct {
	gc *gwv1.GatewayClass
	// paramsErr is set when parametersRef is unusable.
	paramsErr string
	// params is the class-level CoxswainGatewayParameters (dedicated mode).
	params *nn
}

func (t *translator) processGatewayClasses() {
	t.classes = map[string]*classInfo{}
	for _, gc := range t.res.GatewayClasses {
		if gc == nil || gc.Name == "" || string(gc.Spec.ControllerName) != names.ControllerName {
			continue
		}
		if prev, ok := t.classes[gc.Name]; ok && prev.gc.UID <= gc.UID {
			continue
		}
		ci := &classInfo{gc: gc}
		if ref := gc.Spec.ParametersRef; ref != nil {
			ns := ""
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			desc := fmt.Sprintf("parametersRef %s/%s %s/%s", ref.Group, ref.Kind, ns, ref.Name)
			switch {
			case string(ref.Group) != names.ParametersGroup || string(ref.Kind) != names.ParametersKind:
				ci.paramsErr = desc + ": unsupported kind; only " + names.ParametersGroup + "/" + names.ParametersKind + " is supported"
			case ns == "":
				ci.paramsErr = desc + ": namespace is required"
			case t.ix.gwParams[nn{Namespace: ns, Name: ref.Name}] == nil:
				ci.paramsErr = desc + ": not found"
			default:
				ci.params = &nn{Namespace: ns, Name: ref.Name}
			}
		}
		t.classes[gc.Name] = ci
	}
	classNames := make([]string, 0, len(t.classes))
	for n := range t.classes {
		classNames = append(classNames, n)
	}
	sort.Strings(classNames)
	for _, n := range classNames {
		ci := t.classes[n]
		gen := ci.gc.Generation
		var cond metav1.Condition
		if ci.paramsErr != "" {
			cond = status.Accepted(false, status.ReasonInvalidParameters, ci.paramsErr, gen)
		} else {
			cond = status.Accepted(true, status.ReasonAccepted, "GatewayClass is accepted by "+names.ControllerName, gen)
		}
		t.out.GatewayClasses = append(t.out.GatewayClasses, GatewayClassStatus{
			NamespacedName: nn{Name: n},
			Generation:     gen,
			Status: gwv1.GatewayClassStatus{
				Conditions:        []metav1.Condition{cond},
				SupportedFeatures: supportedFeatureList(),
			},
		})
	}
}

// listenerInfo is one Gateway listener as translated.
type listenerInfo struct {
	spec     *gwv1.Listener
	hostname string // "" for any
	protocol snapshot.Protocol
	// supported protocol, no conflicts, refs resolved.
	servable                        bool
	accepted                        metav1.Condition
	conflict                        metav1.Condition
	resolved                        metav1.Condition
	kinds                           []gwv1.RouteGroupKind
	certs                           []string
	attached                        int32
	lastCounted                     *compiledRoute
	routes                          []attachment
	programmedReason, programmedMsg string
}

type gatewayInfo struct {
	gw    *gwv1.Gateway
	class *classInfo
	// paramsErr: Accepted=False InvalidParameters; not served.
	paramsErr string
	// nameConflict: Accepted=False NameConflict; not served, because an
	// older Gateway has the dedicated object names this one needs.
	nameConflict string
	dedicated    bool
	ready        bool
	listeners    []*listenerInfo
	// internal maps Gateway port to shared internal port.
	internal   map[int32]int32
	unassigned []int32
	served     bool
}

// refusal says why a Gateway that is not served was refused.
func (g *gatewayInfo) refusal() string {
	if g.paramsErr != "" {
		return g.paramsErr
	}
	return g.nameConflict
}

func (g *gatewayInfo) servedShared() bool    { return g.served && (!g.dedicated || !g.ready) }
func (g *gatewayInfo) servedDedicated() bool { return g.served && g.dedicated }

// classifyGateways decides, for every Gateway of one of our classes, whether
// it is served and in which mode. It is shared by Translate and
// SharedPortKeys so both agree.
func classifyGateways(res *Resources, ix *index, classes map[string]*classInfo) []*gatewayInfo {
	var out []*gatewayInfo
	seen := map[nn]bool{}
	gws := make([]*gwv1.Gateway, 0, len(res.Gateways))
	for _, g := range res.Gateways {
		if g != nil && named(&g.ObjectMeta) {
			gws = append(gws, g)
		}
	}
	sort.SliceStable(gws, func(i, j int) bool { return byName(&gws[i].ObjectMeta, &gws[j].ObjectMeta) })
	for _, gw := range gws {
		ci := classes[string(gw.Spec.GatewayClassName)]
		k := key(&gw.ObjectMeta)
		if ci == nil || seen[k] {
			continue
		}
		seen[k] = true
		gi := &gatewayInfo{gw: gw, class: ci}
		var params *nn
		if inf := gw.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil {
			ref := inf.ParametersRef
			desc := fmt.Sprintf("infrastructure.parametersRef %s/%s %s", ref.Group, ref.Kind, ref.Name)
			switch {
			case string(ref.Group) != names.ParametersGroup || string(ref.Kind) != names.ParametersKind:
				gi.paramsErr = desc + ": unsupported kind; only " + names.ParametersGroup + "/" + names.ParametersKind + " is supported"
			case ix.gwParams[nn{Namespace: gw.Namespace, Name: ref.Name}] == nil:
				gi.paramsErr = desc + ": not found in namespace " + gw.Namespace
			default:
				params = &nn{Namespace: gw.Namespace, Name: ref.Name}
			}
		} else if ci.paramsErr != "" {
			gi.paramsErr = "GatewayClass " + ci.gc.Name + " " + ci.paramsErr
		} else {
			params = ci.params
		}
		if gi.paramsErr == "" {
			gi.served = true
			if params != nil {
				gi.dedicated = true
				d := ix.dedDeploy[nn{Namespace: gw.Namespace, Name: dedicatedName(gw)}]
				gi.ready = d != nil && d.Status.ReadyReplicas >= 1
			}
		}
		out = append(out, gi)
	}
	refuseDedicatedNameConflicts(out)
	return out
}

// refuseDedicatedNameConflicts refuses every Gateway whose dedicated object
// names an older Gateway of its namespace already has (see
// provision.DedicatedNameConflicts): it is not served at all, so no scope
// of its is published and discovery never serves it. Every Gateway that
// asks for dedicated proxies takes part, valid parameters or not, as in the
// dedicated reconciler.
func refuseDedicatedNameConflicts(gis []*gatewayInfo) {
	var asking []*gwv1.Gateway
	for _, gi := range gis {
		if asksDedicated(gi) {
			asking = append(asking, gi.gw)
		}
	}
	conflicts := provision.DedicatedNameConflicts(asking)
	for _, gi := range gis {
		c, ok := conflicts[key(&gi.gw.ObjectMeta)]
		if !ok || gi.paramsErr != "" {
			continue
		}
		gi.nameConflict = c.Message()
		gi.served, gi.dedicated, gi.ready = false, false, false
	}
}

// asksDedicated: the Gateway or its class has a parametersRef (provision.ParamsRefs).
func asksDedicated(gi *gatewayInfo) bool {
	inf := gi.gw.Spec.Infrastructure
	return (inf != nil && inf.ParametersRef != nil) || gi.class.gc.Spec.ParametersRef != nil
}

// dedicatedName is the name of gw's dedicated Deployment.
func dedicatedName(gw *gwv1.Gateway) string {
	return names.DedicatedName(gw.Name, string(gw.Spec.GatewayClassName))
}

// SharedPortKeys is the set of Gateway listener ports the shared pool
// serves, the `wanted` argument of portalloc.Assign: every distinct port of
// an HTTP or HTTPS listener of every accepted Gateway of our classes that
// the shared pool serves (not dedicated, or dedicated whose proxy has no
// ready replica yet). The VIP Service
// reconciler must call this (not recompute it) so it assigns exactly the
// ports Translate assigns.
func SharedPortKeys(res *Resources) []portalloc.Key {
	if res == nil {
		return nil
	}
	t := &translator{res: res, ix: buildIndex(res), out: &Result{}}
	t.processGatewayClasses()
	return sharedKeys(classifyGateways(res, t.ix, t.classes))
}

func sharedKeys(gws []*gatewayInfo) []portalloc.Key {
	var keys []portalloc.Key
	for _, gi := range gws {
		if !gi.servedShared() {
			continue
		}
		seen := map[int32]bool{}
		for i := range gi.gw.Spec.Listeners {
			l := &gi.gw.Spec.Listeners[i]
			p := int32(l.Port)
			if p < 1 || p > 65535 || seen[p] || (l.Protocol != gwv1.HTTPProtocolType && l.Protocol != gwv1.HTTPSProtocolType) {
				continue
			}
			seen[p] = true
			keys = append(keys, portalloc.Key{Namespace: gi.gw.Namespace, Name: gi.gw.Name, Port: p})
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	return keys
}

func (t *translator) processGateways() {
	t.gwOrder = classifyGateways(t.res, t.ix, t.classes)
	t.gateways = make(map[nn]*gatewayInfo, len(t.gwOrder))
	for _, gi := range t.gwOrder {
		t.gateways[key(&gi.gw.ObjectMeta)] = gi
		t.processListeners(gi)
	}
	assigned, unassigned := portalloc.Assign(t.res.InternalPorts, sharedKeys(t.gwOrder))
	t.out.InternalPorts = assigned
	persisted := make(map[portalloc.Key]int32, len(t.res.InternalPorts))
	for _, a := range t.res.InternalPorts {
		if _, dup := persisted[a.Key]; !dup {
			persisted[a.Key] = a.Internal
		}
	}
	for _, a := range assigned {
		if gi := t.gateways[nn{Namespace: a.Namespace, Name: a.Name}]; gi != nil {
			if gi.internal == nil {
				gi.internal = map[int32]int32{}
			}
			gi.internal[a.Port] = a.Internal
			// A persisted port that could not be kept (claimed twice, or
			// out of range) moves: clients of the VIP Service are
			// unaffected, but say so.
			if old, ok := persisted[a.Key]; ok && old != a.Internal {
				t.event(kindGateway, a.Namespace, a.Name, corev1.EventTypeNormal, status.EventInternalPortRemapped,
					fmt.Sprintf("listener port %d moved from internal port %d to %d", a.Port, old, a.Internal))
			}
		}
	}
	for _, k := range unassigned {
		if gi := t.gateways[nn{Namespace: k.Namespace, Name: k.Name}]; gi != nil {
			gi.unassigned = append(gi.unassigned, k.Port)
			t.warn(kindGateway, k.Namespace, k.Name, status.EventNoInternalPortAvailable,
				fmt.Sprintf("no free internal port in %d-%d for listener port %d", portalloc.Min, portalloc.Max, k.Port))
		}
	}
}

var defaultKinds = []gwv1.RouteGroupKind{
	{Group: ptrGroup(gatewayGroup), Kind: kindHTTPRoute},
	{Group: ptrGroup(gatewayGroup), Kind: kindGRPCRoute},
}

func ptrGroup(s string) *gwv1.Group { g := gwv1.Group(s); return &g }

func (t *translator) processListeners(gi *gatewayInfo) {
	gw := gi.gw
	gen := gw.Generation
	// Conflict detection by port.
	byPort := map[int32][]int{}
	for i := range gw.Spec.Listeners {
		p := int32(gw.Spec.Listeners[i].Port)
		byPort[p] = append(byPort[p], i)
	}
	conflict := make([]string, len(gw.Spec.Listeners))
	for _, idxs := range byPort {
		protos := map[gwv1.ProtocolType]bool{}
		for _, i := range idxs {
			protos[gw.Spec.Listeners[i].Protocol] = true
		}
		if len(protos) > 1 {
			for _, i := range idxs {
				conflict[i] = status.ReasonProtocolConflict
			}
			continue
		}
		hosts := map[string]int{}
		for _, i := range idxs {
			hosts[hostOf(gw.Spec.Listeners[i].Hostname)]++
		}
		for _, i := range idxs {
			if hosts[hostOf(gw.Spec.Listeners[i].Hostname)] > 1 {
				conflict[i] = status.ReasonHostnameConflict
			}
		}
	}
	seenNames := map[gwv1.SectionName]bool{}
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		li := &listenerInfo{spec: l, hostname: hostOf(l.Hostname)}
		if seenNames[l.Name] {
			continue // names are unique by CEL; ignore a repeat
		}
		seenNames[l.Name] = true
		li.accepted = status.Accepted(true, status.ReasonAccepted, "listener is valid", gen)
		li.conflict = status.Conflicted(false, status.ReasonNoConflicts, "no conflicts", gen)
		li.resolved = status.ResolvedRefs(true, status.ReasonResolvedRefs, "all references resolved", gen)
		ok := true
		switch l.Protocol {
		case gwv1.HTTPProtocolType:
			li.protocol = snapshot.ProtocolHTTP
		case gwv1.HTTPSProtocolType:
			li.protocol = snapshot.ProtocolHTTPS
		default:
			ok = false
			li.accepted = status.Accepted(false, status.ReasonUnsupportedProtocol,
				fmt.Sprintf("protocol %q is not supported; use HTTP or HTTPS", l.Protocol), gen)
		}
		if l.Port < 1 || l.Port > 65535 {
			ok = false
			li.accepted = status.Accepted(false, string(gwv1.ListenerReasonPortUnavailable), fmt.Sprintf("port %d is out of range", l.Port), gen)
		}
		if li.hostname != "" && !validHostname(li.hostname) {
			ok = false
			li.accepted = status.Accepted(false, status.ReasonUnsupportedValue, fmt.Sprintf("hostname %q is invalid", li.hostname), gen)
		}
		if c := conflict[i]; c != "" {
			ok = false
			msg := "another listener on port " + fmt.Sprint(l.Port) + " uses a different protocol"
			if c == status.ReasonHostnameConflict {
				msg = "another listener on port " + fmt.Sprint(l.Port) + " uses the same hostname"
			}
			li.conflict = status.Conflicted(true, c, msg, gen)
			li.accepted = status.Accepted(false, c, msg, gen)
		}
		// Route kinds.
		kindsOK := true
		if l.AllowedRoutes != nil && len(l.AllowedRoutes.Kinds) > 0 {
			var bad []string
			for _, k := range l.AllowedRoutes.Kinds {
				g := gatewayGroup
				if k.Group != nil {
					g = string(*k.Group)
				}
				if g == gatewayGroup && (k.Kind == kindHTTPRoute || k.Kind == kindGRPCRoute) {
					dup := false
					for _, have := range li.kinds {
						if have.Kind == k.Kind {
							dup = true
						}
					}
					if !dup {
						li.kinds = append(li.kinds, gwv1.RouteGroupKind{Group: ptrGroup(gatewayGroup), Kind: k.Kind})
					}
				} else {
					bad = append(bad, g+"/"+string(k.Kind))
				}
			}
			if len(bad) > 0 {
				kindsOK = false
				li.resolved = status.ResolvedRefs(false, status.ReasonInvalidRouteKinds,
					"unsupported route kinds: "+strings.Join(bad, ", "), gen)
			}
		} else if li.protocol != "" {
			li.kinds = append([]gwv1.RouteGroupKind(nil), defaultKinds...)
		}
		if li.kinds == nil {
			li.kinds = []gwv1.RouteGroupKind{}
		}
		// TLS.
		if li.protocol == snapshot.ProtocolHTTPS {
			if reason, msg := t.listenerCerts(gw, l, li); reason != "" {
				ok = false
				li.resolved = status.ResolvedRefs(false, reason, msg, gen)
			}
		}
		// Unsupported route kinds alone do not stop the listener serving
		// the kinds it does support.
		li.servable = ok && (kindsOK || li.resolved.Reason == status.ReasonInvalidRouteKinds)
		gi.listeners = append(gi.listeners, li)
	}
}

func hostOf(h *gwv1.Hostname) string {
	if h == nil {
		return ""
	}
	return strings.ToLower(string(*h))
}

// listenerCerts resolves an HTTPS listener's certificateRefs. It returns a
// ResolvedRefs reason and message when any is unusable.
func (t *translator) listenerCerts(gw *gwv1.Gateway, l *gwv1.Listener, li *listenerInfo) (string, string) {
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		return status.ReasonInvalidCertificateRef, "HTTPS listener needs tls.certificateRefs"
	}
	if l.TLS.Mode != nil && *l.TLS.Mode != gwv1.TLSModeTerminate {
		return status.ReasonInvalidCertificateRef, fmt.Sprintf("tls.mode %q is not supported on HTTPS; use Terminate", *l.TLS.Mode)
	}
	for _, ref := range l.TLS.CertificateRefs {
		g, k := "", kindSecret
		if ref.Group != nil {
			g = string(*ref.Group)
		}
		if ref.Kind != nil {
			k = string(*ref.Kind)
		}
		ns := gw.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		desc := fmt.Sprintf("certificateRef %s/%s", ns, ref.Name)
		if g != "" || k != kindSecret {
			return status.ReasonInvalidCertificateRef, fmt.Sprintf("%s: kind %s/%s is not a core Secret", desc, g, k)
		}
		if ns != gw.Namespace && !t.granted(gatewayGroup, kindGateway, gw.Namespace, "", kindSecret, ns, string(ref.Name)) {
			return status.ReasonRefNotPermitted, desc + ": no ReferenceGrant in namespace " + ns + " allows it"
		}
		name, errMsg := t.certificate(ns, string(ref.Name))
		if errMsg != "" {
			return status.ReasonInvalidCertificateRef, desc + ": " + errMsg
		}
		li.certs = append(li.certs, name)
	}
	return "", ""
}

// certificate validates a kubernetes.io/tls Secret once and returns the
// snapshot certificate name, or why it is unusable.
func (t *translator) certificate(ns, name string) (string, string) {
	id := ns + "/" + name
	if _, ok := t.certs[id]; ok {
		return id, ""
	}
	if msg, ok := t.badCerts[id]; ok {
		return "", msg
	}
	msg := ""
	s := t.ix.secrets[nn{Namespace: ns, Name: name}]
	switch {
	case s == nil:
		msg = "Secret not found"
	case s.Type != corev1.SecretTypeTLS:
		msg = fmt.Sprintf("Secret type is %q, want %q", s.Type, corev1.SecretTypeTLS)
	default:
		crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		if _, err := tls.X509KeyPair(crt, key); err != nil {
			msg = "invalid certificate or key: " + err.Error()
		} else {
			t.certs[id] = &snapshot.Certificate{Name: id, CertPEM: string(crt), KeyPEM: string(key)}
			return id, ""
		}
	}
	t.badCerts[id] = msg
	return "", msg
}

// granted reports whether a ReferenceGrant in toNS allows the reference.
func (t *translator) granted(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	for _, g := range t.ix.grants[toNS] {
		from := false
		for _, f := range g.Spec.From {
			if string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS {
				from = true
				break
			}
		}
		if !from {
			continue
		}
		for _, to := range g.Spec.To {
			if string(to.Group) == toGroup && string(to.Kind) == toKind && (to.Name == nil || *to.Name == "" || string(*to.Name) == toName) {
				return true
			}
		}
	}
	return false
}

// gatewayStatuses is called after routes attached, to fill statuses.
func (t *translator) gatewayStatus(gi *gatewayInfo, scope snapshot.Scope) {
	gw := gi.gw
	gen := gw.Generation
	st := GatewayStatus{NamespacedName: key(&gw.ObjectMeta), Generation: gen, Scope: scope}
	anyAccepted, anyRejected := false, false
	for _, li := range gi.listeners {
		ls := gwv1.ListenerStatus{Name: li.spec.Name, SupportedKinds: li.kinds, AttachedRoutes: li.attached}
		var prog metav1.Condition
		switch {
		case !gi.served:
			prog = status.Programmed(false, status.ReasonInvalid, "Gateway is not accepted", gen)
		case !li.servable:
			prog = status.Programmed(false, status.ReasonInvalid, "listener is invalid; see its other conditions", gen)
		case li.programmedReason != "":
			prog = status.Programmed(false, li.programmedReason, li.programmedMsg, gen)
		default:
			prog = status.Programmed(true, status.ReasonProgrammed, "listener is in the published snapshot", gen)
		}
		if li.accepted.Status == metav1.ConditionTrue {
			anyAccepted = true
		} else {
			anyRejected = true
		}
		ls.Conditions = []metav1.Condition{li.accepted, li.conflict, prog, li.resolved}
		sortConds(ls.Conditions)
		st.Status.Listeners = append(st.Status.Listeners, ls)
	}
	var conds []metav1.Condition
	switch {
	case gi.paramsErr != "":
		conds = append(conds,
			status.Accepted(false, status.ReasonInvalidParameters, gi.paramsErr, gen),
			status.Programmed(false, status.ReasonInvalid, "Gateway is not accepted", gen))
	case gi.nameConflict != "":
		conds = append(conds,
			status.Accepted(false, status.ReasonNameConflict, gi.nameConflict, gen),
			status.Programmed(false, status.ReasonInvalid, "Gateway is not accepted", gen))
	case !anyAccepted:
		conds = append(conds,
			status.Accepted(false, status.ReasonListenersNotValid, "no listener is valid", gen),
			status.Programmed(false, status.ReasonInvalid, "Gateway is not accepted", gen))
	default:
		if anyRejected {
			// The Gateway stands on its valid listeners; the reason says
			// some are not (Gateway API: ListenersNotValid with True).
			conds = append(conds, status.Accepted(true, status.ReasonListenersNotValid,
				"Gateway is accepted; some listeners are not valid, see their conditions", gen))
		} else {
			conds = append(conds, status.Accepted(true, status.ReasonAccepted, "Gateway is accepted", gen))
		}
		if len(gi.gw.Spec.Addresses) > 0 {
			conds = append(conds, status.Programmed(false, status.ReasonAddressNotAssigned,
				"spec.addresses is not supported: addresses come from the proxy Service; the listeners are served there", gen))
		} else if len(gi.unassigned) > 0 {
			conds = append(conds, status.Programmed(false, status.ReasonNoResources,
				fmt.Sprintf("no free internal port for listener ports %v", gi.unassigned), gen))
		} else {
			// The status writer replaces this with what the data plane
			// confirmed when it gates Programmed on binds and acks.
			conds = append(conds, status.Programmed(true, status.ReasonProgrammed,
				"Gateway is in the published snapshot", gen))
		}
	}
	if gi.dedicated {
		if gi.ready {
			conds = append(conds, status.DedicatedProxyReady(true, "dedicated proxy Deployment "+dedicatedName(gw)+" has a ready replica", gen))
		} else {
			conds = append(conds, status.DedicatedProxyReady(false, "waiting for dedicated proxy Deployment "+dedicatedName(gw)+"; the shared pool keeps serving", gen))
		}
	}
	sortConds(conds)
	st.Status.Conditions = conds
	if gi.served {
		st.Status.Addresses = t.gatewayAddresses(gi)
	}
	t.out.Gateways = append(t.out.Gateways, st)
}

func sortConds(c []metav1.Condition) {
	slices.SortStableFunc(c, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
}

func (t *translator) gatewayAddresses(gi *gatewayInfo) []gwv1.GatewayStatusAddress {
	var svc *corev1.Service
	if gi.dedicated {
		// The Service name is shortened (hashed) when the Deployment's name
		// is not a valid Service name; look it up as provision names it.
		svc = t.ix.dedSvc[nn{Namespace: gi.gw.Namespace, Name: names.DedicatedServiceName(gi.gw.Name, string(gi.gw.Spec.GatewayClassName))}]
	} else {
		svc = t.ix.vip[key(&gi.gw.ObjectMeta)]
	}
	if svc == nil {
		return nil
	}
	ipType, hostType := gwv1.IPAddressType, gwv1.HostnameAddressType
	var out []gwv1.GatewayStatusAddress
	seen := map[string]bool{}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" && !seen[ing.IP] {
			seen[ing.IP] = true
			out = append(out, gwv1.GatewayStatusAddress{Type: &ipType, Value: ing.IP})
		} else if ing.Hostname != "" && !seen[ing.Hostname] {
			seen[ing.Hostname] = true
			out = append(out, gwv1.GatewayStatusAddress{Type: &hostType, Value: ing.Hostname})
		}
	}
	if len(out) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		out = append(out, gwv1.GatewayStatusAddress{Type: &ipType, Value: svc.Spec.ClusterIP})
	}
	return out
}
