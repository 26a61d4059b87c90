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

package conformance

import (
	"os"
	"strings"
	"testing"
)

func TestSummarizeReport(t *testing.T) {
	raw, err := os.ReadFile("testdata/report.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := SummarizeReport(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"GATEWAY-HTTP core: failure: 35 passed, 1 failed, 0 skipped\n",
		"  failed: GatewayListenerUnsupportedProtocol\n",
		"GATEWAY-HTTP extended: failure: 23 passed, 4 failed, 0 skipped\n",
		"  failed: HTTPRouteCORS, HTTPRouteRequestMirror, HTTPRouteRequestMultipleMirrors, HTTPRouteRequestPercentageMirror\n",
		"Gateway API v1.6.3 (standard channel)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestSummarizeReportRejectsBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"not yaml":       "profiles: [",
		"no profiles":    "apiVersion: gateway.networking.k8s.io/v1\nkind: ConformanceReport\n",
		"unknown fields": "profiles:\n- name: X\n  bogus: 1\n",
	} {
		if _, err := SummarizeReport([]byte(in)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
