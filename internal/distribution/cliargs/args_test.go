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

// Package cliargs checks that every install path starts the coxswain binary
// with arguments its real command line accepts. It is a separate package so
// that the distribution tests do not depend on the whole controller building.
package cliargs

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coxswain-go/coxswain/internal/cmd"
	"github.com/coxswain-go/coxswain/internal/distribution"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// parse resolves args against the real command tree and parses the flags,
// as cobra does before running a command (without running it).
func parse(args []string) error {
	root := cmd.NewRootCommand()
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	if c.Args != nil {
		return c.Args(c, c.Flags().Args())
	}
	return nil
}

func containerArgs(t *testing.T, objs []*unstructured.Unstructured) [][]string {
	t.Helper()
	var out [][]string
	for _, d := range distribution.FilterKind(objs, "Deployment") {
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			var args []string
			for _, a := range c.(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
			out = append(out, args)
		}
	}
	if len(out) == 0 {
		t.Fatal("no Deployment containers rendered")
	}
	return out
}

func TestParseRejectsUnknownFlags(t *testing.T) {
	if err := parse([]string{"serve", "controller", "--no-such-flag"}); err == nil {
		t.Fatal("an unknown flag was accepted; the checks below would prove nothing")
	}
}

// TestChartArgsParse renders the chart with default and non-default values
// and parses the controller's arguments with the coxswain command line.
func TestChartArgsParse(t *testing.T) {
	dir := filepath.Join(testkit.RepoRoot(), distribution.ChartDir)
	for _, values := range []map[string]any{
		nil,
		{"leaderElection": map[string]any{"enabled": false}, "metrics": map[string]any{"enabled": false}, "logLevel": "debug"},
		{"metrics": map[string]any{"port": 9090}, "logLevel": "error"},
	} {
		r, err := distribution.RenderChart(dir, "coxswain", distribution.InstallNamespace, values)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range containerArgs(t, r.Objects) {
			if err := parse(args); err != nil {
				t.Errorf("values %v: coxswain %q: %v", values, args, err)
			}
		}
	}
}

// TestBundleArgsParse does the same for the checked-in OLM bundle.
func TestBundleArgsParse(t *testing.T) {
	b, err := distribution.LoadBundle(filepath.Join(testkit.RepoRoot(), distribution.BundleDir))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := b.InstallObjects(distribution.InstallNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range containerArgs(t, objs) {
		if err := parse(args); err != nil {
			t.Errorf("coxswain %q: %v", args, err)
		}
	}
}
