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
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

type gatewayInfo struct {
	gw    *gwv1.Gateway
	class *classInfo
	// paramsErr: Accepted=False InvalidParameters; not served.
	paramsErr string
	// address is what spec.addresses asks; an unsupported address makes
	// the Gateway Accepted=False UnsupportedAddress, not served.
	address provision.StaticAddress
	// nameConflict: Accepted=False NameConflict; not served, because an
	// older Gateway has the dedicated object names this one needs.
	nameConflict string
	dedicated    bool
	// udpIdle is the UDP session idle timeout the dedicated proxies use
	// (CoxswainGatewayParameters streams.udpSessionIdleTimeout); zero
	// leaves the proxy's default.
	udpIdle snapshot.Duration
	// proxyReady is the DedicatedProxyReady condition of a dedicated
	// Gateway (provision.DedicatedProxyReady); ready is its status: the
	// dedicated proxies serve it and the shared pool no longer does.
	proxyReady metav1.Condition
	ready      bool
	listeners  []*listenerInfo
	// sets are the ListenerSets the Gateway takes, in precedence order;
	// attachedSets counts the accepted ones.
	sets         []*listenerSetInfo
	attachedSets int32
	// backendCert is the snapshot certificate the proxies present to TLS
	// backends (spec.tls.backend.clientCertificateRef); backendTLSSet says
	// the Gateway names one, backendCertProblem why it is unusable.
	backendCert        string
	backendTLSSet      bool
	backendCertProblem *refProblem
	// internal maps Gateway port to shared internal port.
	internal   map[int32]int32
	unassigned []int32
	served     bool
	// ports are the served Gateway's listeners by port (groupPorts).
	ports []gatewayPort
	// memoStatus is the status the last translation with a Memo gave the
	// Gateway (memoPass.gatewayStatus): a Memo keeps a gatewayInfo only
	// for the next translation of the same environment (keptGateways).
	memoStatus *memoGatewayStatus
}

// refusal says why a Gateway that is not served was refused.
func (g *gatewayInfo) refusal() string {
	if g.paramsErr != "" {
		return g.paramsErr
	}
	if g.address.Unsupported != "" {
		return g.address.Unsupported
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
	gws := make([]*gwv1.Gateway, 0, len(res.Gateways))
	for _, g := range res.Gateways {
		if g != nil && named(&g.ObjectMeta) {
			gws = append(gws, g)
		}
	}
	sort.SliceStable(gws, func(i, j int) bool { return byName(&gws[i].ObjectMeta, &gws[j].ObjectMeta) })
	// One Gateway of a name, the first of ours: in name order, one of the
	// same name as the last taken comes right after it.
	var last nn
	for _, gw := range gws {
		ci := classes[string(gw.Spec.GatewayClassName)]
		k := key(&gw.ObjectMeta)
		if ci == nil || (len(out) > 0 && last == k) {
			continue
		}
		last = k
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
		gi.address = provision.StaticAddressOf(gw)
		if gi.paramsErr == "" && gi.address.Unsupported == "" {
			gi.served = true
			if params != nil {
				gi.dedicated = true
				gi.udpIdle = dedicatedUDPIdle(gw, ci.gc, ix)
				gi.proxyReady = provision.DedicatedProxyReady(gw, ix.dedDeploy[nn{Namespace: gw.Namespace, Name: dedicatedName(gw)}])
				gi.ready = gi.proxyReady.Status == metav1.ConditionTrue
			}
		}
		out = append(out, gi)
	}
	refuseDedicatedNameConflicts(out)
	return out
}

// dedicatedUDPIdle is the streams.udpSessionIdleTimeout of a dedicated
// Gateway's effective parameters (zero when unset or unresolvable).
func dedicatedUDPIdle(gw *gwv1.Gateway, gc *gwv1.GatewayClass, ix *index) snapshot.Duration {
	var params []gatewayv1alpha1.CoxswainGatewayParameters
	for _, ref := range provision.ParamsRefs(gw, gc) {
		if p := ix.gwParams[ref.NamespacedName]; p != nil && ref.IsParameters() {
			params = append(params, *p)
		}
	}
	eff, _, err := provision.Resolve(gw, gc, params)
	if err != nil || eff.Streams == nil || eff.Streams.UDPSessionIdleTimeout == nil {
		return 0
	}
	return snapshot.Duration(eff.Streams.UDPSessionIdleTimeout.Duration)
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
		gi.proxyReady = metav1.Condition{}
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

func (t *translator) processGateways() {
	if t.memo.reuseGateways(t) {
		return
	}
	events, fresh := len(t.out.Events), len(t.certs) == 0 && len(t.badCerts) == 0
	t.gwOrder = classifyGateways(t.res, t.ix, t.classes)
	t.gateways = make(map[nn]*gatewayInfo, len(t.gwOrder))
	for _, gi := range t.gwOrder {
		t.gateways[key(&gi.gw.ObjectMeta)] = gi
		t.processListeners(gi)
		t.backendClientCertificate(gi)
	}
	t.lsOrder = classifyListenerSets(t.res, t.ix, t.gateways)
	t.listenerSets = make(map[nn]*listenerSetInfo, len(t.lsOrder))
	for _, lsi := range t.lsOrder {
		t.listenerSets[key(&lsi.ls.ObjectMeta)] = lsi
	}
	t.processListenerSets()
	for _, gi := range t.gwOrder {
		if gi.served {
			gi.groupPorts()
		}
		if ls := gi.setListeners(); len(ls) > 0 {
			t.out.ListenerSetListeners = append(t.out.ListenerSetListeners, GatewayListeners{NamespacedName: key(&gi.gw.ObjectMeta), Listeners: ls})
		}
	}
	t.assignInternalPorts()
	t.numberListeners()
	if fresh {
		t.memo.keepGateways(t, t.out.Events[events:])
	}
}

// allListeners are the Gateway's own listeners, then those of the
// ListenerSets it takes, in precedence order.
func (g *gatewayInfo) allListeners() []*listenerInfo {
	out := g.listeners
	for _, lsi := range g.sets {
		out = append(out[:len(out):len(out)], lsi.listeners...)
	}
	return out
}

// listenerStatus is the status of one listener of gi (its own or a
// ListenerSet's).
func (t *translator) listenerStatus(gi *gatewayInfo, li *listenerInfo) gwv1.ListenerStatus {
	gen := li.owner.generation
	st := t.state(li)
	ls := gwv1.ListenerStatus{Name: li.spec.Name, SupportedKinds: li.kinds, AttachedRoutes: st.attached}
	var prog metav1.Condition
	switch {
	case !gi.served:
		prog = status.Programmed(false, status.ReasonInvalid, "Gateway is not accepted", gen)
	case li.conflict.Status == metav1.ConditionTrue:
		prog = status.Programmed(false, li.conflict.Reason, "listener is conflicted; see its Conflicted condition", gen)
	case !li.servable:
		prog = status.Programmed(false, status.ReasonInvalid, "listener is invalid; see its other conditions", gen)
	case st.programmedReason != "":
		prog = status.Programmed(false, st.programmedReason, st.programmedMsg, gen)
	default:
		prog = status.Programmed(true, status.ReasonProgrammed, "listener is in the published snapshot", gen)
	}
	ls.Conditions = []metav1.Condition{li.accepted, li.conflict, prog, li.resolved}
	sortConds(ls.Conditions)
	return ls
}

// gatewayStatuses is called after routes attached, to fill statuses.
func (t *translator) gatewayStatus(gi *gatewayInfo, scope snapshot.Scope) {
	if st, ok := t.memo.gatewayStatus(t, gi, scope); ok {
		t.out.Gateways = append(t.out.Gateways, st)
		return
	}
	gw := gi.gw
	gen := gw.Generation
	st := GatewayStatus{&GatewayState{NamespacedName: key(&gw.ObjectMeta), Generation: gen, Scope: scope}}
	anyAccepted, anyRejected := false, false
	for _, li := range gi.listeners {
		if li.accepted.Status == metav1.ConditionTrue {
			anyAccepted = true
		} else {
			anyRejected = true
		}
		st.Status.Listeners = append(st.Status.Listeners, t.listenerStatus(gi, li))
	}
	if gi.attachedSets > 0 || gi.gw.Spec.AllowedListeners != nil {
		st.Status.AttachedListenerSets = ptr.To(gi.attachedSets)
	}
	var conds []metav1.Condition
	switch {
	case gi.paramsErr != "":
		conds = append(conds,
			status.Accepted(false, status.ReasonInvalidParameters, gi.paramsErr, gen),
			status.Programmed(false, status.ReasonInvalid, "Gateway is not accepted", gen))
	case gi.address.Unsupported != "":
		conds = append(conds,
			status.Accepted(false, string(gwv1.GatewayReasonUnsupportedAddress), gi.address.Unsupported, gen),
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
		if msg := t.addressNotUsable(gi); msg != "" {
			conds = append(conds, status.Programmed(false, string(gwv1.GatewayReasonAddressNotUsable), msg, gen))
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
	if gi.served {
		conds = append(conds, gi.gatewayTLSConditions(gen)...)
	}
	if gi.dedicated {
		conds = append(conds, gi.proxyReady)
	}
	sortConds(conds)
	st.Status.Conditions = conds
	if gi.served {
		st.Status.Addresses = t.gatewayAddresses(gi)
	}
	t.out.Gateways = append(t.out.Gateways, st)
	t.memo.keepGatewayStatus(t, gi, scope, st)
}

func sortConds(c []metav1.Condition) {
	slices.SortStableFunc(c, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
}
