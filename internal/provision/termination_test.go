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
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
)

// TestShutdownAndHeaderCapOverlay: the Gateway's parameters win over the
// class's; shutdown is one block (a Gateway block replaces the class's whole,
// unset fields fall back to the built-in defaults, not to the class);
// maxResponseHeaderBytes is a field of its own.
func TestShutdownAndHeaderCapOverlay(t *testing.T) {
	classSpec := gatewayv1alpha1.CoxswainGatewayParametersSpec{
		MaxResponseHeaderBytes: ptrTo[int32](65536),
		Shutdown: &gatewayv1alpha1.Shutdown{
			PreStopSleepSeconds: ptrTo[int32](4), DrainSeconds: ptrTo[int32](20), TerminationGracePeriodSeconds: ptrTo[int32](60),
		},
	}
	for _, tc := range []struct {
		name        string
		class, gw   *gatewayv1alpha1.CoxswainGatewayParametersSpec
		wantCap     *int32
		wantShut    ShutdownSettings
		wantArgsHas []string
	}{
		{name: "neither", class: &gatewayv1alpha1.CoxswainGatewayParametersSpec{}, gw: &gatewayv1alpha1.CoxswainGatewayParametersSpec{},
			wantShut: ShutdownSettings{2, 5, 30}, wantArgsHas: []string{"--shutdown-drain-window 5s", "--shutdown-timeout 22s"}},
		{name: "class only", class: &classSpec, gw: &gatewayv1alpha1.CoxswainGatewayParametersSpec{},
			wantCap: ptrTo[int32](65536), wantShut: ShutdownSettings{4, 20, 60},
			wantArgsHas: []string{"--shutdown-drain-window 20s", "--shutdown-timeout 35s", "--max-response-header-bytes 65536"}},
		{name: "gateway cap wins, class shutdown stays", class: &classSpec,
			gw:      &gatewayv1alpha1.CoxswainGatewayParametersSpec{MaxResponseHeaderBytes: ptrTo[int32](1 << 21)},
			wantCap: ptrTo[int32](1 << 21), wantShut: ShutdownSettings{4, 20, 60},
			wantArgsHas: []string{"--max-response-header-bytes 2097152"}},
		{name: "gateway shutdown block replaces the class's whole", class: &classSpec,
			gw:      &gatewayv1alpha1.CoxswainGatewayParametersSpec{Shutdown: &gatewayv1alpha1.Shutdown{DrainSeconds: ptrTo[int32](3)}},
			wantCap: ptrTo[int32](65536), wantShut: ShutdownSettings{2, 3, 30},
			wantArgsHas: []string{"--shutdown-drain-window 3s", "--shutdown-timeout 24s"}},
		{name: "streams idle timeout becomes a proxy flag", gw: &gatewayv1alpha1.CoxswainGatewayParametersSpec{
			Streams: &gatewayv1alpha1.Streams{IdleTimeout: &metav1.Duration{Duration: 30 * time.Minute}}},
			wantShut: ShutdownSettings{2, 5, 30}, wantArgsHas: []string{"--stream-idle-timeout 30m0s"}},
		{name: "gateway only", gw: &gatewayv1alpha1.CoxswainGatewayParametersSpec{
			MaxResponseHeaderBytes: ptrTo[int32](4096),
			Shutdown:               &gatewayv1alpha1.Shutdown{PreStopSleepSeconds: ptrTo[int32](0), TerminationGracePeriodSeconds: ptrTo[int32](10)}},
			wantCap: ptrTo[int32](4096), wantShut: ShutdownSettings{0, 5, 10},
			wantArgsHas: []string{"--shutdown-timeout 4s", "--max-response-header-bytes 4096"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := testGateway()
			var class *gwv1.GatewayClass
			var params []gatewayv1alpha1.CoxswainGatewayParameters
			if tc.class != nil {
				class = testClass(classRef("infra", "defaults"))
				params = append(params, gatewayv1alpha1.CoxswainGatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "defaults"}, Spec: *tc.class})
			} else {
				class = testClass(nil)
			}
			if tc.gw != nil {
				gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: names.ParametersGroup, Kind: names.ParametersKind, Name: "mine"}}
				params = append(params, gatewayv1alpha1.CoxswainGatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: "mine"}, Spec: *tc.gw})
			}
			eff, dedicated, err := Resolve(gw, class, params)
			if err != nil || !dedicated {
				t.Fatalf("Resolve: dedicated=%v err=%v", dedicated, err)
			}
			if !reflect.DeepEqual(eff.MaxResponseHeaderBytes, tc.wantCap) {
				t.Errorf("maxResponseHeaderBytes = %v, want %v", deref(eff.MaxResponseHeaderBytes), deref(tc.wantCap))
			}
			if eff.Shutdown != tc.wantShut {
				t.Errorf("shutdown = %+v, want %+v", eff.Shutdown, tc.wantShut)
			}
			d, err := RenderDedicated(DedicatedInput{Gateway: gw, Effective: eff, InstallNamespace: testInstallNS, DefaultImage: testImage})
			if err != nil {
				t.Fatal(err)
			}
			spec := d.Deployment.Spec.Template.Spec
			args := " " + strings.Join(spec.Containers[0].Args, " ") + " "
			for _, want := range tc.wantArgsHas {
				if !strings.Contains(args, " "+want+" ") {
					t.Errorf("proxy args %q lack %q", args, want)
				}
			}
			if tc.wantCap == nil && strings.Contains(args, "--max-response-header-bytes") {
				t.Errorf("proxy args %q set --max-response-header-bytes although no parameters do", args)
			}
			if got := *spec.TerminationGracePeriodSeconds; got != int64(tc.wantShut.TerminationGracePeriodSeconds) {
				t.Errorf("terminationGracePeriodSeconds = %d, want %d", got, tc.wantShut.TerminationGracePeriodSeconds)
			}
			lc := spec.Containers[0].Lifecycle
			switch {
			case tc.wantShut.PreStopSleepSeconds == 0 && lc != nil:
				t.Errorf("preStop rendered for a 0 s sleep: %+v", lc)
			case tc.wantShut.PreStopSleepSeconds > 0 && (lc == nil || lc.PreStop == nil || lc.PreStop.Sleep == nil ||
				lc.PreStop.Sleep.Seconds != int64(tc.wantShut.PreStopSleepSeconds)):
				t.Errorf("preStop = %+v, want a %d s sleep", lc, tc.wantShut.PreStopSleepSeconds)
			}
		})
	}
}

// TestShutdownFitsGracePeriod: for any shutdown block, the preStop sleep,
// the proxy's drain window and its in-flight bound end at least a second
// before the kubelet's SIGKILL.
func TestShutdownFitsGracePeriod(t *testing.T) {
	vals := []*int32{nil, ptrTo[int32](0), ptrTo[int32](1), ptrTo[int32](5), ptrTo[int32](40), ptrTo[int32](300)}
	for _, pre := range vals {
		for _, drain := range vals {
			for _, grace := range append(vals[2:], ptrTo[int32](3600)) {
				in := &gatewayv1alpha1.Shutdown{PreStopSleepSeconds: pre, DrainSeconds: drain, TerminationGracePeriodSeconds: grace}
				s := ResolveShutdown(in)
				args := s.proxyArgs()
				timeout, err := strconv.Atoi(strings.TrimSuffix(args[3], "s"))
				if err != nil || args[2] != "--shutdown-timeout" || timeout < 1 {
					t.Fatalf("%+v: args %v", s, args)
				}
				if used := s.PreStopSleepSeconds + s.DrainSeconds + int32(timeout) + exitMargin; used > s.TerminationGracePeriodSeconds {
					t.Errorf("pre %v drain %v grace %v: preStop+drain+in-flight+exit = %d s exceeds the grace period %d s",
						deref(pre), deref(drain), deref(grace), used, s.TerminationGracePeriodSeconds)
				}
				if grace != nil && *grace > s.PreStopSleepSeconds+s.DrainSeconds+1 && s.TerminationGracePeriodSeconds != *grace {
					t.Errorf("a valid grace period %d was changed to %d", *grace, s.TerminationGracePeriodSeconds)
				}
			}
		}
	}
	if DefaultShutdown() != (ShutdownSettings{2, 5, 30}) {
		t.Errorf("DefaultShutdown() = %+v", DefaultShutdown())
	}
	if (ShutdownSettings{}).orDefault() != DefaultShutdown() {
		t.Error("the zero ShutdownSettings does not render the defaults")
	}
}

func deref(p *int32) any {
	if p == nil {
		return "<unset>"
	}
	return *p
}
