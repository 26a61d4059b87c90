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

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/kubeapply"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
)

// The dedicated reconciler's own rights (the rest of the manager role lives
// in rbac.go). It writes ConfigMaps (the per-Gateway copy of the discovery
// trust bundle) and sets blockOwnerDeletion on owner references to Gateways,
// which needs update on gateways/finalizers.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;gatewayclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways/finalizers,verbs=update
// +kubebuilder:rbac:groups=gateway.coxswain-labs.dev,resources=coxswaingatewayparameters,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Event reasons of the dedicated reconciler (Warning events on the Gateway).
const (
	EventInvalidParameters = "InvalidParameters"
	EventRenderFailed      = "RenderFailed"
	EventApplyFailed       = "ApplyFailed"
	maxEventNote           = 1000
)

// DedicatedReconciler provisions the dedicated proxies of Gateways that opt
// in through CoxswainGatewayParameters: it resolves the parameters, renders
// the objects with internal/provision, server-side applies them with field
// manager coxswain-controller (force ownership, so drift is undone), and
// deletes them when the Gateway leaves dedicated mode. Owner references to
// the Gateway let the garbage collector remove them when the Gateway goes.
//
// It never writes Gateway status: the translator derives status.addresses,
// the DedicatedProxyReady condition and Accepted=False/InvalidParameters
// from the same inputs (provision.Resolve) and from the objects applied here.
type DedicatedReconciler struct {
	// Client reads through the manager's cache and writes to the apiserver.
	Client client.Client
	// Recorder records Warning events on the Gateway; from the manager
	// when nil.
	Recorder events.EventRecorder
	// InstallNamespace is the controller's namespace: discovery endpoints
	// and the source of the trust bundle ConfigMap.
	InstallNamespace string
	// DefaultImage is the controller's own image, for parameters without one.
	DefaultImage string
}

// dedicatedKinds are the kinds the reconciler renders (for pruning).
var dedicatedKinds = []struct {
	gvk  schema.GroupVersionKind
	list func() client.ObjectList
}{
	{appsv1.SchemeGroupVersion.WithKind("Deployment"), func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{corev1.SchemeGroupVersion.WithKind("Service"), func() client.ObjectList { return &corev1.ServiceList{} }},
	{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), func() client.ObjectList { return &corev1.ServiceAccountList{} }},
	{corev1.SchemeGroupVersion.WithKind("ConfigMap"), func() client.ObjectList { return &corev1.ConfigMapList{} }},
	{autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), func() client.ObjectList { return &autoscalingv2.HorizontalPodAutoscalerList{} }},
	{policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }},
}

// SetupWithManager registers the reconciler: it is driven by Gateways, the
// objects it owns, GatewayClasses, CoxswainGatewayParameters (mapped to the
// Gateways that use them), the trust bundle ConfigMap and ListenerSets (mapped
// to their Gateway, whose proxies serve their listeners).
func (r *DedicatedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.InstallNamespace == "" {
		return fmt.Errorf("dedicated reconciler: InstallNamespace is required")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(names.FieldManager)
	}
	trustBundle := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.InstallNamespace && o.GetName() == names.TrustBundleConfigMapName
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("dedicated-proxy").
		For(&gwv1.Gateway{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// Status-only updates of kinds with a generation (a Deployment
		// rolling out, an HPA sampling) cannot be drift; skip them.
		Owns(&appsv1.Deployment{}, builder.WithPredicates(specOrMetadataChanged)).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}, builder.WithPredicates(specOrMetadataChanged)).
		Owns(&policyv1.PodDisruptionBudget{}, builder.WithPredicates(specOrMetadataChanged)).
		// Which Gateway keeps contested dedicated object names depends on
		// its namesakes too.
		Watches(&gwv1.Gateway{}, namesakeHandler(r.Client)).
		Watches(&gwv1.GatewayClass{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysOfClass)).
		Watches(&gatewayv1alpha1.CoxswainGatewayParameters{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysOfParams)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allGateways), builder.WithPredicates(trustBundle))
	if servesListenerSets(mgr.GetRESTMapper()) {
		b = b.Watches(&gwv1.ListenerSet{}, handler.EnqueueRequestsFromMapFunc(gatewayOfListenerSet))
	}
	return b.Complete(r)
}

// specOrMetadataChanged passes updates that change the generation (the
// spec), labels, annotations or owner references.
var specOrMetadataChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
			!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences())
	},
}

// Reconcile brings one Gateway's dedicated objects to the rendered state.
func (r *DedicatedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var gw gwv1.Gateway
	if err := r.Client.Get(ctx, req.NamespacedName, &gw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx).WithValues("gateway", klog.KObj(&gw))
	ctx = log.IntoContext(ctx, logger)
	if !gw.DeletionTimestamp.IsZero() {
		// Owner references hand the objects to the garbage collector.
		return ctrl.Result{}, nil
	}

	var class *gwv1.GatewayClass
	var c gwv1.GatewayClass
	switch err := r.Client.Get(ctx, types.NamespacedName{Name: string(gw.Spec.GatewayClassName)}, &c); {
	case err == nil:
		class = &c
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}

	if len(provision.ParamsRefs(&gw, class)) > 0 {
		// An older Gateway of the namespace has the names this one's
		// objects would take: provision nothing (the translator refuses
		// it), and remove what it may have had.
		conflict, err := dedicatedNameConflict(ctx, r.Client, &gw)
		if err != nil {
			return ctrl.Result{}, err
		}
		if conflict != nil {
			r.warn(&gw, EventNameConflict, conflict.Message())
			logger.Info("refusing dedicated proxies: name taken", "name", conflict.Name, "holder", conflict.Holder.String())
			return ctrl.Result{}, r.prune(ctx, &gw, nil)
		}
	}

	var params []gatewayv1alpha1.CoxswainGatewayParameters
	for _, ref := range provision.ParamsRefs(&gw, class) {
		if !ref.IsParameters() || ref.Namespace == "" || ref.Name == "" {
			continue
		}
		var p gatewayv1alpha1.CoxswainGatewayParameters
		switch err := r.Client.Get(ctx, ref.NamespacedName, &p); {
		case err == nil:
			params = append(params, p)
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
	}

	eff, dedicated, err := provision.Resolve(&gw, class, params)
	if err != nil {
		// The translator sets Accepted=False/InvalidParameters. Keep what
		// runs today: a parameters object being recreated must not take the
		// Gateway's proxies down. A fix of the ref re-triggers us.
		r.warn(&gw, EventInvalidParameters, err.Error())
		logger.Info("invalid parameters; leaving dedicated objects as they are", "error", err.Error())
		return ctrl.Result{}, nil
	}
	if !dedicated {
		return ctrl.Result{}, r.prune(ctx, &gw, nil)
	}

	trust, err := r.trustBundle(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	served, err := r.withListenerSets(ctx, &gw)
	if err != nil {
		return ctrl.Result{}, err
	}
	rendered, err := provision.RenderDedicated(provision.DedicatedInput{
		Gateway:          served,
		Effective:        eff,
		InstallNamespace: r.InstallNamespace,
		DefaultImage:     r.DefaultImage,
		TrustBundle:      trust,
	})
	if err != nil {
		r.warn(&gw, EventRenderFailed, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if len(rendered.Sanitized) > 0 {
		r.warn(&gw, provision.EventPodTemplateSanitized, "ignored in podTemplate: "+strings.Join(rendered.Sanitized, "; "))
	}

	for _, obj := range rendered.Objects() {
		if err := r.removeForeign(ctx, &gw, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.handOffReplicas(ctx, rendered.Deployment); err != nil {
		return ctrl.Result{}, err
	}
	if err := kubeapply.PrepareClusterIP(ctx, r.Client, rendered.Service); err != nil {
		// The translator reports the address as not usable; the Service
		// keeps the address it has.
		r.warn(&gw, EventApplyFailed, err.Error())
		rendered.Service.Spec.ClusterIP = ""
	}

	keep := map[string]bool{}
	for _, obj := range rendered.Objects() {
		u, err := provision.ToUnstructured(obj)
		if err != nil {
			return ctrl.Result{}, reconcile.TerminalError(err)
		}
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(names.FieldManager), client.ForceOwnership); err != nil {
			r.warn(&gw, EventApplyFailed, fmt.Sprintf("apply %s %s: %v", u.GetKind(), u.GetName(), err))
			return ctrl.Result{}, fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		keep[u.GetKind()+"/"+u.GetName()] = true
	}
	return ctrl.Result{}, r.prune(ctx, &gw, keep)
}

// removeForeign deletes the live object named like desired when another
// Gateway owns it (a namesake that held the name before, or an earlier
// Gateway of the same name): a Gateway never adopts another's objects.
// Recreating the ServiceAccount invalidates the tokens of the other
// Gateway's proxies, which could otherwise still pass discovery's check for
// this Gateway's scope; a Deployment's selector could not change anyway.
func (r *DedicatedReconciler) removeForeign(ctx context.Context, gw *gwv1.Gateway, desired client.Object) error {
	gvk, err := r.Client.GroupVersionKindFor(desired)
	if err != nil {
		return err
	}
	o, err := r.Client.Scheme().New(gvk)
	if err != nil {
		return err
	}
	live, ok := o.(client.Object)
	if !ok {
		return fmt.Errorf("%s is not an object", gvk)
	}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), live); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	for _, ref := range live.GetOwnerReferences() {
		if ref.Kind != "Gateway" || ref.UID == gw.UID {
			continue
		}
		log.FromContext(ctx).Info("deleting an object another Gateway owns before applying ours",
			"kind", gvk.Kind, "name", live.GetName(), "owner", ref.Name)
		uid := live.GetUID()
		err := r.Client.Delete(ctx, live, client.PropagationPolicy("Background"), client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete %s %s/%s of Gateway %s: %w", gvk.Kind, live.GetNamespace(), live.GetName(), ref.Name, err)
		}
		return nil
	}
	return nil
}

// replicasHandoffManager keeps a Deployment's replica count while its
// ownership passes from coxswain-controller to the HorizontalPodAutoscaler.
const replicasHandoffManager = "coxswain-controller-replicas-handoff"

// handOffReplicas runs before a rendering that leaves spec.replicas to an
// autoscaler. Dropping the field from our apply would otherwise let the
// apiserver reset it to 1 until the HPA acts; applying the live count under a
// second field manager keeps it (the Kubernetes "transferring ownership"
// recipe). The HPA's next scale takes the field over from that manager.
func (r *DedicatedReconciler) handOffReplicas(ctx context.Context, desired *appsv1.Deployment) error {
	if desired == nil || desired.Spec.Replicas != nil {
		return nil
	}
	var live appsv1.Deployment
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), &live); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if live.Spec.Replicas == nil || !ownsReplicas(&live, names.FieldManager) {
		return nil
	}
	handoff := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: live.Name, Namespace: live.Namespace},
		Spec:       appsv1.DeploymentSpec{Replicas: live.Spec.Replicas},
	}
	u, err := provision.ToUnstructured(handoff)
	if err != nil {
		return err
	}
	// Keep only spec.replicas: the typed conversion adds empty structs.
	u.Object["spec"] = map[string]interface{}{"replicas": int64(*live.Spec.Replicas)}
	log.FromContext(ctx).Info("handing Deployment replicas over to the autoscaler", "replicas", *live.Spec.Replicas)
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(replicasHandoffManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("hand replicas of Deployment %s/%s over to the autoscaler: %w", live.Namespace, live.Name, err)
	}
	return nil
}

// ownsReplicas reports whether manager applied spec.replicas of d.
func ownsReplicas(d *appsv1.Deployment, manager string) bool {
	for _, mf := range d.ManagedFields {
		if mf.Manager != manager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]interface{}
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			continue
		}
		if spec, ok := fields["f:spec"].(map[string]interface{}); ok {
			if _, ok := spec["f:replicas"]; ok {
				return true
			}
		}
	}
	return false
}

// prune deletes the dedicated objects of gw (found by label, and owned by
// this very Gateway) that are not in keep: the HPA or PDB the parameters no
// longer ask for, objects named after a former class, or everything when the
// Gateway left dedicated mode.
func (r *DedicatedReconciler) prune(ctx context.Context, gw *gwv1.Gateway, keep map[string]bool) error {
	sel := client.MatchingLabels(names.DedicatedProxySelector())
	sel[names.LabelGatewayName] = names.LabelValue(gw.Name)
	for _, k := range dedicatedKinds {
		list := k.list()
		if err := r.Client.List(ctx, list, client.InNamespace(gw.Namespace), sel); err != nil {
			return fmt.Errorf("list %s: %w", k.gvk.Kind, err)
		}
		objs, err := objectsOf(list)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if !ownedBy(obj, gw) || keep[k.gvk.Kind+"/"+obj.GetName()] {
				continue
			}
			log.FromContext(ctx).Info("deleting dedicated object", "kind", k.gvk.Kind, "name", obj.GetName())
			if err := r.Client.Delete(ctx, obj, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s %s/%s: %w", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	return nil
}

func objectsOf(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceAccountList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *autoscalingv2.HorizontalPodAutoscalerList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *policyv1.PodDisruptionBudgetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list type %T", list)
	}
	return out, nil
}

func ownedBy(obj client.Object, gw *gwv1.Gateway) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == gw.UID && ref.Kind == "Gateway" {
			return true
		}
	}
	return false
}

// trustBundle reads the discovery CA bundle the install namespace publishes;
// "" while it does not exist yet (its creation re-triggers every Gateway).
func (r *DedicatedReconciler) trustBundle(ctx context.Context) (string, error) {
	var cm corev1.ConfigMap
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.InstallNamespace, Name: names.TrustBundleConfigMapName}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		log.FromContext(ctx).Info("trust bundle ConfigMap not found yet", "configmap", klog.KRef(r.InstallNamespace, names.TrustBundleConfigMapName))
		return "", nil
	case err != nil:
		return "", err
	}
	return cm.Data[names.TrustBundleKey], nil
}

func (r *DedicatedReconciler) warn(gw *gwv1.Gateway, reason, note string) {
	if r.Recorder == nil {
		return
	}
	if len(note) > maxEventNote {
		note = note[:maxEventNote-3] + "..."
	}
	r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, reason, "Provision", "%s", note)
}

func (r *DedicatedReconciler) gatewaysOfClass(ctx context.Context, obj client.Object) []reconcile.Request {
	var gws gwv1.GatewayList
	if err := r.Client.List(ctx, &gws); err != nil {
		log.FromContext(ctx).Error(err, "listing Gateways for a GatewayClass change")
		return nil
	}
	var out []reconcile.Request
	for _, gw := range gws.Items {
		if string(gw.Spec.GatewayClassName) == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gw)})
		}
	}
	return withNamesakes(ctx, r.Client, out)
}

func (r *DedicatedReconciler) gatewaysOfParams(ctx context.Context, obj client.Object) []reconcile.Request {
	var gws gwv1.GatewayList
	var classes gwv1.GatewayClassList
	if err := r.Client.List(ctx, &gws); err != nil {
		log.FromContext(ctx).Error(err, "listing Gateways for a parameters change")
		return nil
	}
	if err := r.Client.List(ctx, &classes); err != nil {
		log.FromContext(ctx).Error(err, "listing GatewayClasses for a parameters change")
		return nil
	}
	var out []reconcile.Request
	for _, key := range provision.ParamsUsers(client.ObjectKeyFromObject(obj), gws.Items, classes.Items) {
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	return withNamesakes(ctx, r.Client, out)
}

func (r *DedicatedReconciler) allGateways(ctx context.Context, _ client.Object) []reconcile.Request {
	var gws gwv1.GatewayList
	if err := r.Client.List(ctx, &gws); err != nil {
		log.FromContext(ctx).Error(err, "listing Gateways for a trust bundle change")
		return nil
	}
	out := make([]reconcile.Request, 0, len(gws.Items))
	for _, gw := range gws.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gw)})
	}
	return out
}
