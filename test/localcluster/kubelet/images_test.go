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

package kubelet

import (
	"reflect"
	"strings"
	"testing"
)

func TestPlanLaunch(t *testing.T) {
	b := Binaries{EchoBasic: "/bin/echo-basic", Coxswain: "/bin/coxswain", CoreDNS: "/bin/coredns"}
	tests := []struct {
		image         string
		command, args []string
		want          launchPlan
		wantErr       string
	}{
		{image: "registry.k8s.io/gateway-api/echo-basic:v1.5.1", want: launchPlan{path: "/bin/echo-basic", args: []string{}, defaultPort: 3000, defaultPortEnv: "HTTP_PORT"}},
		{image: "gcr.io/k8s-staging-gateway-api/echo-basic@sha256:abcd", args: []string{"-x"}, want: launchPlan{path: "/bin/echo-basic", args: []string{"-x"}, defaultPort: 3000, defaultPortEnv: "HTTP_PORT"}},
		{image: "coxswain:dev", args: []string{"proxy", "--a=b"}, want: launchPlan{path: "/bin/coxswain", args: []string{"proxy", "--a=b"}}},
		{image: "ghcr.io/coxswain-go/coxswain:v1.0.0", command: []string{"/coxswain", "controller"}, args: []string{"--v=2"},
			want: launchPlan{path: "/bin/coxswain", args: []string{"controller", "--v=2"}}},
		{image: "localhost:5000/coxswain", want: launchPlan{path: "/bin/coxswain", args: []string{}}},
		{image: "registry.k8s.io/coredns/coredns:v1.12.2", args: []string{"-conf", "/root/Corefile"}, want: launchPlan{path: "/bin/coredns", args: []string{"-conf", "/root/Corefile"}, defaultPort: 53}},
		{image: "nginx:1.27", wantErr: `image "nginx:1.27" has no local binary`},
		{image: "example.com/coxswain-operator:v1", wantErr: "has no local binary"},
	}
	for _, tt := range tests {
		got, err := b.planLaunch(tt.image, tt.command, tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.image, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.image, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.image, got, tt.want)
		}
	}
	tagged := Binaries{Coxswain: "/bin/coxswain", CoxswainTags: map[string]string{"v0.1.0": "/old/coxswain"}}
	for image, want := range map[string]string{
		"ghcr.io/coxswain-go/coxswain:v0.1.0": "/old/coxswain",
		"localhost:5000/coxswain:v0.1.0":      "/old/coxswain",
		"coxswain:v0.2.0":                     "/bin/coxswain",
		"coxswain@sha256:abcd":                "/bin/coxswain",
		"localhost:5000/coxswain":             "/bin/coxswain",
	} {
		if got, err := tagged.planLaunch(image, nil, nil); err != nil || got.path != want {
			t.Errorf("%s: runs %q (%v), want %q", image, got.path, err, want)
		}
	}
	extra := Binaries{Images: map[string]string{"olm": "/bin/olm"}}
	got, err := extra.planLaunch("quay.io/operator-framework/olm:v0.38.0", []string{"/bin/olm"}, []string{"--namespace", "olm"})
	if err != nil || got.path != "/bin/olm" || !reflect.DeepEqual(got.args, []string{"--namespace", "olm"}) {
		t.Errorf("olm image: %+v (%v), want /bin/olm --namespace olm", got, err)
	}
	if _, err := extra.planLaunch("quay.io/operator-framework/catalog:v0.38.0", nil, nil); err == nil {
		t.Errorf("an image Images does not name ran")
	}
	if _, err := (Binaries{}).planLaunch("coxswain:dev", nil, nil); err == nil || !strings.Contains(err.Error(), "LOCALCLUSTER_COXSWAIN") {
		t.Errorf("unconfigured coxswain binary: %v", err)
	}
	if _, err := (Binaries{}).planLaunch("registry.k8s.io/coredns/coredns:v1.12.2", nil, nil); err == nil || !strings.Contains(err.Error(), "LOCALCLUSTER_COREDNS") {
		t.Errorf("unconfigured coredns binary: %v", err)
	}
}
