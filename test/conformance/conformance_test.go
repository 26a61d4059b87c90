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
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"
)

// EnvRun must be set for TestConformance to run: the suite needs a cluster
// (KUBECONFIG) with Coxswain installed, which `make conformance` provides.
const EnvRun = "COXSWAIN_CONFORMANCE"

// TestConformance runs the upstream suite exactly as its own
// TestConformance does (conformance.RunConformance: options from the
// suite's flags, e.g. -gateway-class, -conformance-profiles,
// -report-output), and afterwards prints the report's counts per profile.
func TestConformance(t *testing.T) {
	if os.Getenv(EnvRun) == "" {
		t.Skipf("set %s=1 and KUBECONFIG to a cluster running Coxswain (make conformance does both)", EnvRun)
	}
	opts := conformance.DefaultOptions(t)
	if path := opts.ReportOutputPath; path != "" {
		// Registered before the suite registers the cleanup that writes
		// the report, so it runs after it (cleanups run last-in first-out).
		t.Cleanup(func() {
			summary, err := SummarizeReportFile(path)
			if err != nil {
				t.Logf("conformance report %s: %v", path, err)
				return
			}
			fmt.Print(summary)
		})
	}
	conformance.RunConformanceWithOptions(t, opts)
}

// SummarizeReportFile reads a conformance report YAML and renders the
// passed/failed/skipped counts of each profile's core and extended tests,
// with the names of failed and skipped tests.
func SummarizeReportFile(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return SummarizeReport(raw)
}

// SummarizeReport renders the counts of a conformance report (YAML or JSON).
func SummarizeReport(raw []byte) (string, error) {
	var report confv1.ConformanceReport
	if err := yaml.UnmarshalStrict(raw, &report); err != nil {
		return "", fmt.Errorf("parsing conformance report: %w", err)
	}
	if len(report.ProfileReports) == 0 {
		return "", fmt.Errorf("conformance report has no profiles")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "conformance report: Gateway API %s (%s channel), mode %s, %s %s\n",
		report.GatewayAPIVersion, report.GatewayAPIChannel, report.Mode, report.Project, report.Version)
	line := func(profile, part string, s confv1.Status) {
		fmt.Fprintf(&b, "%s %s: %s: %d passed, %d failed, %d skipped\n",
			profile, part, s.Result, s.Passed, s.Failed, s.Skipped)
		if len(s.FailedTests) > 0 {
			fmt.Fprintf(&b, "  failed: %s\n", strings.Join(s.FailedTests, ", "))
		}
		if len(s.SkippedTests) > 0 {
			fmt.Fprintf(&b, "  skipped: %s\n", strings.Join(s.SkippedTests, ", "))
		}
	}
	for _, p := range report.ProfileReports {
		line(p.Name, "core", p.Core)
		if p.Extended != nil {
			line(p.Name, "extended", p.Extended.Status)
			if len(p.Extended.UnsupportedFeatures) > 0 {
				fmt.Fprintf(&b, "  unsupported features: %s\n", strings.Join(p.Extended.UnsupportedFeatures, ", "))
			}
		}
	}
	return b.String(), nil
}
