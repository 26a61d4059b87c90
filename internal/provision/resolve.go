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

package provision

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
)

// Built-in defaults for fields no parameters layer sets.
const (
	DefaultReplicas             int32 = 1
	DefaultAutoscalingMin       int32 = 1
	DefaultTargetCPUUtilization int32 = 80
	DefaultServiceType                = corev1.ServiceTypeLoadBalancer
	DefaultLogLevel                   = gatewayv1alpha1.LogLevelInfo
	DefaultAccessLog                  = true
)

// Effective is the resolved configuration of a Gateway's dedicated proxies:
// the per-field overlay of the Gateway's parameters over its class's, with
// built-in defaults for what neither sets.
type Effective struct {
	// Replicas is the Deployment's replica count; nil when autoscaling is
	// enabled (the HorizontalPodAutoscaler owns it then).
	Replicas *int32
	// Image is the proxy image; empty means the controller's own image.
	Image string
	// Resources of the proxy container; nil means the built-in default.
	Resources *corev1.ResourceRequirements
	// ServiceType of the dedicated Service.
	ServiceType corev1.ServiceType
	// ServiceAnnotations are added to the dedicated Service.
	ServiceAnnotations map[string]string
	// PodTemplates are the podTemplate patches in merge order: the class's
	// first, then the Gateway's. Each is strategic-merged onto the result of
	// the previous one.
	PodTemplates []Layer
	// Autoscaling is set only when an enabled autoscaler is configured, with
	// MinReplicas and TargetCPUUtilizationPercentage defaulted.
	Autoscaling *gatewayv1alpha1.Autoscaling
	// AccessLog turns the proxy's access log on or off.
	AccessLog bool
	// LogLevel is the proxy's log verbosity.
	LogLevel gatewayv1alpha1.LogLevel
	// Shutdown is the resolved shutdown block (preStop sleep, drain, grace
	// period).
	Shutdown ShutdownSettings
	// MaxResponseHeaderBytes caps upstream response heads; nil leaves the
	// proxy's built-in default (1 MiB).
	MaxResponseHeaderBytes *int32
	// Streams tunes the L4 listeners; nil leaves the proxy's defaults
	// (TCP idle 1h, UDP session idle 10s).
	Streams *gatewayv1alpha1.Streams
	// RateLimit is where Global RateLimits count; nil: no store.
	RateLimit *gatewayv1alpha1.RateLimitStore
	// Tracing is where the proxies export spans; nil: tracing off.
	Tracing *gatewayv1alpha1.Tracing
	// Sources are the parameters objects that contributed, class first.
	Sources []types.NamespacedName
}

// Layer is one podTemplate patch and the parameters object it comes from.
type Layer struct {
	Source types.NamespacedName
	Patch  *gatewayv1alpha1.PodTemplatePatch
}

// ReplicaFloor is the fewest pods the configuration runs: the autoscaler's
// minimum when autoscaling, else the replica count.
func (e Effective) ReplicaFloor() int32 {
	if e.Autoscaling != nil && e.Autoscaling.MinReplicas != nil {
		return *e.Autoscaling.MinReplicas
	}
	if e.Replicas != nil {
		return *e.Replicas
	}
	return DefaultReplicas
}

// ParamsRef is a reference from a Gateway or a GatewayClass to parameters.
type ParamsRef struct {
	// From is "Gateway" or "GatewayClass".
	From  string
	Group string
	Kind  string
	types.NamespacedName
}

// String names the reference the way error messages and events do.
func (r ParamsRef) String() string {
	ns := r.Namespace
	if ns == "" {
		ns = "<unset>"
	}
	group := r.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s parametersRef %s/%s %s/%s", r.From, group, r.Kind, ns, r.Name)
}

// IsParameters reports whether the reference names a CoxswainGatewayParameters.
func (r ParamsRef) IsParameters() bool {
	return r.Group == names.ParametersGroup && r.Kind == names.ParametersKind
}

// ParamsRefs returns the parameter references of a Gateway of a class we
// control: the class's first, then the Gateway's. It returns nil when the
// class is nil or belongs to another controller. The reconciler fetches each
// reference that IsParameters and passes what it found to Resolve.
func ParamsRefs(gw *gwv1.Gateway, class *gwv1.GatewayClass) []ParamsRef {
	if gw == nil || class == nil || string(class.Spec.ControllerName) != names.ControllerName {
		return nil
	}
	var refs []ParamsRef
	if p := class.Spec.ParametersRef; p != nil {
		r := ParamsRef{From: "GatewayClass", Group: string(p.Group), Kind: string(p.Kind)}
		r.Name = p.Name
		if p.Namespace != nil {
			r.Namespace = string(*p.Namespace)
		}
		refs = append(refs, r)
	}
	if gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.ParametersRef != nil {
		p := gw.Spec.Infrastructure.ParametersRef
		r := ParamsRef{From: "Gateway", Group: string(p.Group), Kind: string(p.Kind)}
		r.Name = p.Name
		r.Namespace = gw.Namespace
		refs = append(refs, r)
	}
	return refs
}

// Resolve decides whether a Gateway runs dedicated proxies and computes its
// effective parameters. params holds the CoxswainGatewayParameters objects
// that exist among those the references name (others are ignored).
//
// A Gateway is dedicated when its class is ours and the class's parametersRef
// or the Gateway's spec.infrastructure.parametersRef is set. A reference to
// another kind, a class reference without a namespace, or a reference whose
// target does not exist is an error naming the reference (the Gateway is then
// not Accepted, reason InvalidParameters); dedicated is still true in that
// case, because the Gateway asked for dedicated proxies.
func Resolve(gw *gwv1.Gateway, class *gwv1.GatewayClass, params []gatewayv1alpha1.CoxswainGatewayParameters) (Effective, bool, error) {
	refs := ParamsRefs(gw, class)
	if len(refs) == 0 {
		return Effective{}, false, nil
	}
	byKey := make(map[types.NamespacedName]*gatewayv1alpha1.CoxswainGatewayParameters, len(params))
	for i := range params {
		byKey[types.NamespacedName{Namespace: params[i].Namespace, Name: params[i].Name}] = &params[i]
	}
	var layers []*gatewayv1alpha1.CoxswainGatewayParameters
	var sources []types.NamespacedName
	for _, r := range refs {
		if !r.IsParameters() {
			return Effective{}, true, fmt.Errorf("%s: unsupported kind, want %s/%s", r, names.ParametersGroup, names.ParametersKind)
		}
		if r.Namespace == "" {
			return Effective{}, true, fmt.Errorf("%s: namespace is required for %s", r, names.ParametersKind)
		}
		if r.Name == "" {
			return Effective{}, true, fmt.Errorf("%s: name is required", r)
		}
		p, ok := byKey[r.NamespacedName]
		if !ok {
			return Effective{}, true, fmt.Errorf("%s: not found", r)
		}
		layers = append(layers, p)
		sources = append(sources, r.NamespacedName)
	}
	return overlay(layers, sources), true, nil
}

// overlay applies the layers in order (class first, Gateway last): a field a
// later layer sets wins; resources, autoscaling and shutdown replace as whole
// blocks (so the API's check that a block's grace period fits its drain
// holds for the result); podTemplates stack.
func overlay(layers []*gatewayv1alpha1.CoxswainGatewayParameters, sources []types.NamespacedName) Effective {
	var s gatewayv1alpha1.CoxswainGatewayParametersSpec
	e := Effective{Sources: sources}
	for i, l := range layers {
		in := l.Spec.DeepCopy()
		if in.Replicas != nil {
			s.Replicas = in.Replicas
		}
		if in.Image != nil {
			s.Image = in.Image
		}
		if in.Resources != nil {
			s.Resources = in.Resources
		}
		if in.ServiceType != nil {
			s.ServiceType = in.ServiceType
		}
		if in.ServiceAnnotations != nil {
			s.ServiceAnnotations = in.ServiceAnnotations
		}
		if in.Autoscaling != nil {
			s.Autoscaling = in.Autoscaling
		}
		if in.AccessLog != nil {
			s.AccessLog = in.AccessLog
		}
		if in.LogLevel != nil {
			s.LogLevel = in.LogLevel
		}
		if in.Shutdown != nil {
			s.Shutdown = in.Shutdown
		}
		if in.MaxResponseHeaderBytes != nil {
			s.MaxResponseHeaderBytes = in.MaxResponseHeaderBytes
		}
		if in.Streams != nil {
			s.Streams = in.Streams
		}
		if in.RateLimit != nil {
			s.RateLimit = in.RateLimit
		}
		if in.Tracing != nil {
			s.Tracing = in.Tracing
		}
		if in.PodTemplate != nil {
			e.PodTemplates = append(e.PodTemplates, Layer{Source: sources[i], Patch: in.PodTemplate})
		}
	}
	if s.Image != nil {
		e.Image = *s.Image
	}
	e.Resources = s.Resources
	e.ServiceType = DefaultServiceType
	if s.ServiceType != nil {
		e.ServiceType = corev1.ServiceType(*s.ServiceType)
	}
	if len(s.ServiceAnnotations) > 0 {
		e.ServiceAnnotations = s.ServiceAnnotations
	}
	e.AccessLog = DefaultAccessLog
	if s.AccessLog != nil {
		e.AccessLog = *s.AccessLog
	}
	e.LogLevel = DefaultLogLevel
	if s.LogLevel != nil {
		e.LogLevel = *s.LogLevel
	}
	e.Shutdown = ResolveShutdown(s.Shutdown)
	e.MaxResponseHeaderBytes = s.MaxResponseHeaderBytes
	e.Streams = s.Streams
	e.RateLimit = s.RateLimit
	e.Tracing = s.Tracing
	if a := s.Autoscaling; a != nil && a.Enabled {
		as := a.DeepCopy()
		if as.MinReplicas == nil {
			as.MinReplicas = ptrTo(DefaultAutoscalingMin)
		}
		if as.MaxReplicas == nil {
			// The API requires maxReplicas when enabled; stay safe for
			// objects written before that rule.
			as.MaxReplicas = ptrTo(*as.MinReplicas)
		}
		if *as.MaxReplicas < *as.MinReplicas {
			as.MaxReplicas = ptrTo(*as.MinReplicas)
		}
		if as.TargetCPUUtilizationPercentage == nil {
			as.TargetCPUUtilizationPercentage = ptrTo(DefaultTargetCPUUtilization)
		}
		e.Autoscaling = as
	} else {
		e.Replicas = ptrTo(DefaultReplicas)
		if s.Replicas != nil {
			e.Replicas = ptrTo(*s.Replicas)
		}
	}
	return e
}

// ParamsUsers returns, sorted, the Gateways (among gateways, with their
// classes) whose effective parameters read the parameters object key. The
// reconciler maps a parameters change to these Gateways.
func ParamsUsers(key types.NamespacedName, gateways []gwv1.Gateway, classes []gwv1.GatewayClass) []types.NamespacedName {
	classByName := make(map[string]*gwv1.GatewayClass, len(classes))
	for i := range classes {
		classByName[classes[i].Name] = &classes[i]
	}
	var out []types.NamespacedName
	for i := range gateways {
		gw := &gateways[i]
		for _, r := range ParamsRefs(gw, classByName[string(gw.Spec.GatewayClassName)]) {
			if r.IsParameters() && r.NamespacedName == key {
				out = append(out, types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func ptrTo[T any](v T) *T { return &v }
