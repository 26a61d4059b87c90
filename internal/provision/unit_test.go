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
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
)

func tol(key, op, value string) map[string]interface{} {
	m := map[string]interface{}{"key": key}
	if op != "" {
		m["operator"] = op
	}
	if value != "" {
		m["value"] = value
	}
	return m
}

func TestMergeTolerations(t *testing.T) {
	cases := []struct {
		name    string
		current []interface{}
		patch   []interface{}
		want    []interface{}
		wantErr string
	}{
		{
			name:    "append new key",
			current: []interface{}{tol("a", "Equal", "1")},
			patch:   []interface{}{tol("b", "Exists", "")},
			want:    []interface{}{tol("a", "Equal", "1"), tol("b", "Exists", "")},
		},
		{
			name:    "same key and operator replaces value",
			current: []interface{}{tol("a", "Equal", "1")},
			patch:   []interface{}{tol("a", "Equal", "2")},
			want:    []interface{}{tol("a", "Equal", "2")},
		},
		{
			name:    "empty operator matches Equal",
			current: []interface{}{tol("a", "", "1")},
			patch:   []interface{}{tol("a", "Equal", "2")},
			want:    []interface{}{tol("a", "Equal", "2")},
		},
		{
			name:    "same key other operator is another toleration",
			current: []interface{}{tol("a", "Equal", "1")},
			patch:   []interface{}{tol("a", "Exists", "")},
			want:    []interface{}{tol("a", "Equal", "1"), tol("a", "Exists", "")},
		},
		{
			name:    "delete directive",
			current: []interface{}{tol("a", "Equal", "1"), tol("b", "Exists", "")},
			patch:   []interface{}{map[string]interface{}{"key": "a", "operator": "Equal", "$patch": "delete"}},
			want:    []interface{}{tol("b", "Exists", "")},
		},
		{
			name:    "replace directive",
			current: []interface{}{tol("a", "Equal", "1")},
			patch:   []interface{}{map[string]interface{}{"$patch": "replace"}, tol("c", "Exists", "")},
			want:    []interface{}{tol("c", "Exists", "")},
		},
		{
			name:    "null field removes it",
			current: []interface{}{map[string]interface{}{"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule"}},
			patch:   []interface{}{map[string]interface{}{"key": "a", "operator": "Equal", "effect": nil}},
			want:    []interface{}{tol("a", "Equal", "1")},
		},
		{
			name:    "not an object",
			patch:   []interface{}{"a"},
			wantErr: "tolerations[0]: expected an object",
		},
		{
			name:    "unknown directive",
			patch:   []interface{}{map[string]interface{}{"key": "a", "$patch": "explode"}},
			wantErr: "unknown $patch directive",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MergeTolerations(c.current, c.patch)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestMergePodSpecTolerationsTyped(t *testing.T) {
	base := corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpEqual, Value: "1", Effect: corev1.TaintEffectNoSchedule}}}
	got, unknown, err := MergePodSpec(base, map[string]interface{}{
		"tolerations": []interface{}{map[string]interface{}{"key": "x", "operator": "Equal", "value": "2"}},
	})
	if err != nil || len(unknown) != 0 {
		t.Fatalf("err=%v unknown=%v", err, unknown)
	}
	want := []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpEqual, Value: "2", Effect: corev1.TaintEffectNoSchedule}}
	if !reflect.DeepEqual(got.Tolerations, want) {
		t.Errorf("tolerations = %+v, want %+v", got.Tolerations, want)
	}
	// Stock strategic merge would have replaced the list atomically; the
	// base must not be mutated either.
	if base.Tolerations[0].Value != "1" {
		t.Errorf("base mutated")
	}
}

func testGateway() *gwv1.Gateway {
	return &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "apps", UID: "uid-1"},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: "dedicated",
			Listeners:        []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}},
		},
	}
}

func testClass(ref *gwv1.ParametersReference) *gwv1.GatewayClass {
	return &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "dedicated"},
		Spec:       gwv1.GatewayClassSpec{ControllerName: names.ControllerName, ParametersRef: ref},
	}
}

func classRef(ns, name string) *gwv1.ParametersReference {
	n := gwv1.Namespace(ns)
	return &gwv1.ParametersReference{Group: names.ParametersGroup, Kind: names.ParametersKind, Name: name, Namespace: &n}
}

func TestResolve(t *testing.T) {
	p := func(ns, name string, spec gatewayv1alpha1.CoxswainGatewayParametersSpec) gatewayv1alpha1.CoxswainGatewayParameters {
		return gatewayv1alpha1.CoxswainGatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	gw := testGateway()
	gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: names.ParametersGroup, Kind: names.ParametersKind, Name: "mine"}}
	class := testClass(classRef("infra", "defaults"))
	params := []gatewayv1alpha1.CoxswainGatewayParameters{
		p("infra", "defaults", gatewayv1alpha1.CoxswainGatewayParametersSpec{Replicas: ptrTo[int32](3), Image: ptrTo("class")}),
		p("apps", "mine", gatewayv1alpha1.CoxswainGatewayParametersSpec{Image: ptrTo("gw")}),
		// Same name in another namespace must not be picked up.
		p("other", "mine", gatewayv1alpha1.CoxswainGatewayParametersSpec{Image: ptrTo("wrong")}),
	}
	eff, dedicated, err := Resolve(gw, class, params)
	if err != nil || !dedicated {
		t.Fatalf("dedicated=%v err=%v", dedicated, err)
	}
	if eff.Image != "gw" || *eff.Replicas != 3 {
		t.Errorf("overlay: image=%q replicas=%d", eff.Image, *eff.Replicas)
	}
	if want := []types.NamespacedName{{Namespace: "infra", Name: "defaults"}, {Namespace: "apps", Name: "mine"}}; !reflect.DeepEqual(eff.Sources, want) {
		t.Errorf("sources = %v", eff.Sources)
	}

	// Missing target: the error names the ref.
	_, dedicated, err = Resolve(gw, class, params[:1])
	if err == nil || !dedicated || !strings.Contains(err.Error(), "Gateway parametersRef gateway.coxswain-labs.dev/CoxswainGatewayParameters apps/mine: not found") {
		t.Errorf("missing target: dedicated=%v err=%v", dedicated, err)
	}

	// Another controller's class: never dedicated.
	other := testClass(classRef("infra", "defaults"))
	other.Spec.ControllerName = "example.com/other"
	if _, dedicated, err := Resolve(gw, other, params); dedicated || err != nil {
		t.Errorf("other controller: dedicated=%v err=%v", dedicated, err)
	}
}

func TestParamsUsers(t *testing.T) {
	a := *testGateway()
	b := *testGateway()
	b.Name = "b"
	b.Spec.Infrastructure = &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: names.ParametersGroup, Kind: names.ParametersKind, Name: "own"}}
	c := *testGateway()
	c.Name, c.Spec.GatewayClassName = "c", "plain"
	classes := []gwv1.GatewayClass{*testClass(classRef("infra", "defaults")), *testClass(nil)}
	classes[1].Name = "plain"
	got := ParamsUsers(types.NamespacedName{Namespace: "infra", Name: "defaults"}, []gwv1.Gateway{c, b, a}, classes)
	want := []types.NamespacedName{{Namespace: "apps", Name: "b"}, {Namespace: "apps", Name: "edge"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("class users = %v, want %v", got, want)
	}
	got = ParamsUsers(types.NamespacedName{Namespace: "apps", Name: "own"}, []gwv1.Gateway{c, b, a}, classes)
	if want := []types.NamespacedName{{Namespace: "apps", Name: "b"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("gateway users = %v, want %v", got, want)
	}
}

// TestVIPAssignmentsSurviveRestart renders VIP Services from one allocation,
// reads the assignments back as a restarted controller would, and checks
// that allocating again with a new Gateway keeps every existing port.
func TestVIPAssignmentsSurviveRestart(t *testing.T) {
	gws := []*gwv1.Gateway{testGateway(), testGateway()}
	gws[1].Name = "second"
	gws[1].Spec.Listeners = append(gws[1].Spec.Listeners, gwv1.Listener{Name: "https", Protocol: gwv1.HTTPSProtocolType, Port: 443})
	var wanted []portalloc.Key
	for _, gw := range gws {
		for _, l := range gw.Spec.Listeners {
			wanted = append(wanted, portalloc.Key{Namespace: gw.Namespace, Name: gw.Name, Port: int32(l.Port)})
		}
	}
	first, unassigned := portalloc.Assign(nil, wanted)
	if len(unassigned) != 0 {
		t.Fatalf("unassigned: %v", unassigned)
	}
	var svcs []*corev1.Service
	for _, gw := range gws {
		svcs = append(svcs, RenderVIPService(gw, "coxswain-system", first))
	}
	// Round trip through the API representation.
	for i, s := range svcs {
		u, err := ToUnstructured(s)
		if err != nil {
			t.Fatal(err)
		}
		var back corev1.Service
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &back); err != nil {
			t.Fatal(err)
		}
		svcs[i] = &back
	}
	read := AssignmentsFromVIPServices(append(svcs, &corev1.Service{}, nil))
	if !reflect.DeepEqual(read, first) {
		t.Fatalf("read back %v, want %v", read, first)
	}
	third := testGateway()
	third.Name = "aaa-new"
	again, _ := portalloc.Assign(read, append(wanted, portalloc.Key{Namespace: "apps", Name: "aaa-new", Port: 80}))
	for _, a := range first {
		found := false
		for _, b := range again {
			if b == a {
				found = true
			}
		}
		if !found {
			t.Errorf("assignment %v moved after restart: %v", a, again)
		}
	}
}

func TestRenderDedicatedErrors(t *testing.T) {
	if _, err := RenderDedicated(DedicatedInput{}); err == nil {
		t.Error("no Gateway: want error")
	}
	gw := testGateway()
	if _, err := RenderDedicated(DedicatedInput{Gateway: gw, DefaultImage: "img"}); err == nil || !strings.Contains(err.Error(), "install namespace") {
		t.Errorf("no install namespace: err = %v", err)
	}
}
