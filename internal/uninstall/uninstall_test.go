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

package uninstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

var api testkit.Envtest

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(api.Run(m))
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(api.Config(t), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}

func ns(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func objMeta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

func deployment(m metav1.ObjectMeta, replicas int32) *appsv1.Deployment {
	sel := map[string]string{"app": m.Name}
	return &appsv1.Deployment{
		ObjectMeta: m,
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "coxswain:test"}}},
			},
		},
	}
}

func exists(t *testing.T, c client.Client, obj client.Object) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestRemovesWhatTheControllerCreated: the controller is stopped first,
// then everything labelled as Coxswain's (in any namespace) and the
// generated CA, trust bundle and Lease are deleted; the install path's own
// objects, a user's look-alikes and a user-provided CA are kept.
func TestRemovesWhatTheControllerCreated(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	managed := map[string]string{names.LabelManagedBy: names.ValueManagedBy}
	install, apps := "coxswain-system", "team-a"
	create(t, c, ns(install), ns(apps))

	controller := deployment(objMeta(install, names.ControllerDeploymentName, map[string]string{names.LabelManagedBy: "Helm"}), 1)
	sharedPool := deployment(objMeta(install, names.SharedPoolName, managed), 2)
	dedicated := deployment(objMeta(apps, "coxswain-edge", managed), 2)
	dedicatedSvc := &corev1.Service{ObjectMeta: objMeta(apps, "coxswain-edge", managed), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	dedicatedSA := &corev1.ServiceAccount{ObjectMeta: objMeta(apps, "coxswain-edge", managed)}
	trustCopy := &corev1.ConfigMap{ObjectMeta: objMeta(apps, "coxswain-edge-trust", managed)}
	vip := &corev1.Service{ObjectMeta: objMeta(apps, "coxswain-web-vip", managed), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	ca := &corev1.Secret{ObjectMeta: objMeta(install, names.CASecretName, map[string]string{names.LabelComponent: names.ComponentDiscoveryCA})}
	trust := &corev1.ConfigMap{ObjectMeta: objMeta(install, names.TrustBundleConfigMapName, map[string]string{names.LabelComponent: names.ComponentDiscoveryTrust})}
	lease := &coordinationv1.Lease{ObjectMeta: objMeta(install, names.LeaseName, nil)}
	// Kept: the user's own objects, whatever their names.
	userDeploy := deployment(objMeta(apps, "shop", map[string]string{names.LabelManagedBy: "Helm"}), 1)
	userSvc := &corev1.Service{ObjectMeta: objMeta(apps, "shop", nil), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	create(t, c, controller, sharedPool, dedicated, dedicatedSvc, dedicatedSA, trustCopy, vip, ca, trust, lease, userDeploy, userSvc)

	var logged []string
	rep, err := Run(ctx, c, Options{Namespace: install, Timeout: time.Minute, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatalf("uninstall: %v (log %v)", err, logged)
	}
	if !exists(t, c, controller) || *controller.Spec.Replicas != 0 {
		t.Errorf("the controller Deployment should be kept (its install path owns it) and scaled to 0, replicas %v", controller.Spec.Replicas)
	}
	for _, o := range []client.Object{sharedPool, dedicated, dedicatedSvc, dedicatedSA, trustCopy, vip, ca, trust, lease} {
		if exists(t, c, o) {
			t.Errorf("%s/%s still exists", o.GetNamespace(), o.GetName())
		}
	}
	for _, o := range []client.Object{userDeploy, userSvc} {
		if !exists(t, c, o) {
			t.Errorf("the user's %s/%s was deleted", o.GetNamespace(), o.GetName())
		}
	}
	for _, want := range []string{"Deployment team-a/coxswain-edge", "Lease coxswain-system/" + names.LeaseName, "Secret coxswain-system/" + names.CASecretName} {
		if !slices.Contains(rep.Deleted, want) {
			t.Errorf("report %v lacks %q", rep.Deleted, want)
		}
	}

	// A second run finds nothing: uninstall is idempotent.
	rep, err = Run(ctx, c, Options{Namespace: install, Timeout: time.Minute})
	if err != nil || len(rep.Deleted) != 0 {
		t.Errorf("second run: deleted %v, err %v", rep.Deleted, err)
	}
}

// TestKeepsAUserProvidedCA: a CA Secret the user made (no component label)
// survives.
func TestKeepsAUserProvidedCA(t *testing.T) {
	c := newClient(t)
	install := "coxswain-byo-ca"
	create(t, c, ns(install))
	ca := &corev1.Secret{ObjectMeta: objMeta(install, names.CASecretName, nil)}
	create(t, c, ca)
	if _, err := Run(context.Background(), c, Options{Namespace: install, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if !exists(t, c, ca) {
		t.Error("the user-provided CA Secret was deleted")
	}
}

// TestRefusesWhileOLMOwnsTheController: OLM would scale the controller
// back up, so the CSV must go first.
func TestRefusesWhileOLMOwnsTheController(t *testing.T) {
	c := newClient(t)
	install := "coxswain-olm"
	create(t, c, ns(install))
	d := deployment(objMeta(install, names.ControllerDeploymentName, nil), 1)
	d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion", Name: "coxswain.v0.1.0", UID: "0b7a7c8e-5a3c-4a38-9a55-4d7e1f0c2b11"}}
	create(t, c, d)
	_, err := Run(context.Background(), c, Options{Namespace: install, Timeout: time.Minute})
	if !errors.Is(err, ErrOLMOwned) {
		t.Fatalf("err = %v, want ErrOLMOwned", err)
	}
	if !exists(t, c, d) || *d.Spec.Replicas != 1 {
		t.Error("the OLM-owned controller was touched")
	}
}
