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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

func conflictGateway(ns, name, class string, created time.Time) *gwv1.Gateway {
	return &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(class)},
	}
}

func TestDedicatedNameConflicts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	long := strings.Repeat("a", 60) // {gateway}-{class} too long for a Service name: hashed
	hashedSvc := names.DedicatedServiceName(long, "coxswain")
	for _, tc := range []struct {
		name string
		gws  []*gwv1.Gateway
		want map[types.NamespacedName]NameConflict
	}{
		{
			name: "older Gateway keeps the name, whatever the order given",
			gws: []*gwv1.Gateway{
				conflictGateway("default", "web", "internal-coxswain", t0.Add(time.Hour)),
				conflictGateway("default", "web-internal", "coxswain", t0),
			},
			want: map[types.NamespacedName]NameConflict{
				key("default", "web"): {Holder: key("default", "web-internal"), HolderClass: "coxswain", Name: "web-internal-coxswain"},
			},
		},
		{
			name: "same creationTimestamp: namespace/name decides",
			gws: []*gwv1.Gateway{
				conflictGateway("default", "web-internal", "coxswain", t0),
				conflictGateway("default", "web", "internal-coxswain", t0),
			},
			want: map[types.NamespacedName]NameConflict{
				key("default", "web-internal"): {Holder: key("default", "web"), HolderClass: "internal-coxswain", Name: "web-internal-coxswain"},
			},
		},
		{
			name: "names clash only within a namespace",
			gws: []*gwv1.Gateway{
				conflictGateway("a", "web-internal", "coxswain", t0),
				conflictGateway("b", "web", "internal-coxswain", t0),
			},
		},
		{
			name: "three namesakes: the oldest keeps the name, both others are refused",
			gws: []*gwv1.Gateway{
				conflictGateway("ns", "a", "b-c-d", t0.Add(time.Hour)),
				conflictGateway("ns", "a-b", "c-d", t0.Add(2*time.Hour)),
				conflictGateway("ns", "a-b-c", "d", t0),
			},
			want: map[types.NamespacedName]NameConflict{
				key("ns", "a"):   {Holder: key("ns", "a-b-c"), HolderClass: "d", Name: "a-b-c-d"},
				key("ns", "a-b"): {Holder: key("ns", "a-b-c"), HolderClass: "d", Name: "a-b-c-d"},
			},
		},
		{
			name: "a Gateway listed twice is not its own namesake",
			gws: []*gwv1.Gateway{
				conflictGateway("ns", "web", "coxswain", t0),
				conflictGateway("ns", "web", "coxswain", t0),
				nil,
			},
		},
		{
			// A's {gateway}-{class} is too long for a Service name, so its
			// Service is "gw-...-<hash>"; B's objects would take exactly
			// that name.
			name: "a hashed Service name is claimed too",
			gws: []*gwv1.Gateway{
				conflictGateway("ns", long, "coxswain", t0),
				conflictGateway("ns", hashedSvc[:strings.LastIndex(hashedSvc, "-")], hashedSvc[strings.LastIndex(hashedSvc, "-")+1:], t0.Add(time.Hour)),
			},
			want: map[types.NamespacedName]NameConflict{
				key("ns", hashedSvc[:strings.LastIndex(hashedSvc, "-")]): {Holder: key("ns", long), HolderClass: "coxswain", Name: hashedSvc},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DedicatedNameConflicts(tc.gws)
			if len(got) != len(tc.want) || (len(tc.want) > 0 && !reflect.DeepEqual(got, tc.want)) {
				t.Fatalf("conflicts = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDedicatedObjectNames(t *testing.T) {
	if got := DedicatedObjectNames("web", "coxswain"); !reflect.DeepEqual(got, []string{"web-coxswain"}) {
		t.Errorf("DedicatedObjectNames(web, coxswain) = %v", got)
	}
	long := strings.Repeat("a", 60)
	got := DedicatedObjectNames(long, "coxswain")
	if len(got) != 2 || got[0] != long+"-coxswain" || got[1] != names.DedicatedServiceName(long, "coxswain") || got[1] == got[0] {
		t.Errorf("DedicatedObjectNames(long, coxswain) = %v: want the Deployment name and the hashed Service name", got)
	}
}

func TestNameConflictMessageNamesTheHolder(t *testing.T) {
	msg := NameConflict{Holder: types.NamespacedName{Namespace: "default", Name: "web-internal"}, HolderClass: "coxswain", Name: "web-internal-coxswain"}.Message()
	for _, want := range []string{`"web-internal-coxswain"`, "Gateway default/web-internal", "class coxswain"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
