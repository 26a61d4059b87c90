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

package distribution

import (
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

const (
	commitA = "f85f1ac36f0309983a9064d45bc625130393b64c"
	commitB = "3d74bcf6595279e9eaeee3bb27c9766b499bb052"
)

func TestParseReleases(t *testing.T) {
	got, err := ParseReleases([]byte("# comment\n\nv0.1.0 " + commitA + "\n  v0.2.0-rc.1 " + commitB + "  \nv0.2.0 " + commitB + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"v0.1.0 " + commitA, "v0.2.0-rc.1 " + commitB, "v0.2.0 " + commitB}
	if len(got) != len(want) {
		t.Fatalf("parsed %d releases, want %d: %v", len(got), len(want), got)
	}
	for i, r := range got {
		if s := r.Tag() + " " + r.Commit; s != want[i] {
			t.Errorf("release %d is %q, want %q", i, s, want[i])
		}
	}
}

func TestParseReleasesRejectsBadRecords(t *testing.T) {
	for name, tt := range map[string]struct{ data, wantErr string }{
		"no v":            {"0.1.0 " + commitA, "must start with v"},
		"short commit":    {"v0.1.0 f85f1ac", "full 40-character"},
		"missing commit":  {"v0.1.0", "want \"v<semver> <commit>\""},
		"extra field":     {"v0.1.0 " + commitA + " x", "want \"v<semver> <commit>\""},
		"not semver":      {"v0.1 " + commitA, "not semver"},
		"out of order":    {"v0.2.0 " + commitA + "\nv0.1.0 " + commitB, "line 2: v0.1.0 is not newer than v0.2.0"},
		"duplicate":       {"v0.1.0 " + commitA + "\nv0.1.0 " + commitB, "not newer"},
		"build metadata":  {"v0.1.0+x " + commitA, "build metadata"},
		"uppercase hash":  {"v0.1.0 " + strings.ToUpper(commitA), "full 40-character"},
		"line is counted": {"# header\nv0.1.0 abc", "line 2:"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseReleases([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseReleases(%q) = %v, want an error containing %q", tt.data, err, tt.wantErr)
			}
		})
	}
}

// TestReleaseRecord: the checked-in record parses, and its first release
// is the v0.1.0 tag.
func TestReleaseRecord(t *testing.T) {
	rs, err := ReadReleases(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Tag() != "v0.1.0" || rs[0].Commit != commitA {
		t.Fatalf("%s starts with %v, want v0.1.0 %s", ReleasesFile, rs, commitA)
	}
}

func TestNextRelease(t *testing.T) {
	recorded := []Release{{Version: semver.MustParse("0.1.0"), Commit: commitA}}
	for _, tt := range []struct {
		records  []Release
		version  string
		wantPrev string // "" when there is none
		wantErr  string
	}{
		{recorded, "0.2.0", "v0.1.0", ""},
		{recorded, "0.1.1", "v0.1.0", ""},
		{recorded, "1.0.0-rc.1", "v0.1.0", ""},
		{nil, "0.1.0", "", ""},
		{recorded, "0.1.0", "", "not newer than the last release v0.1.0"},
		{recorded, "0.0.9", "", "not newer than the last release v0.1.0"},
		{recorded, "0.1.0-rc.1", "", "not newer"}, // a pre-release sorts before its release
		{recorded, "", "", "no version given"},
		{recorded, "v0.2.0", "", "without the leading v (0.2.0)"},
		{recorded, "0.2", "", "not semver"},
		{recorded, "0.2.0+meta", "", "build metadata"},
	} {
		v, prev, err := NextRelease(tt.records, tt.version)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NextRelease(%q) = %v, want an error containing %q", tt.version, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("NextRelease(%q): %v", tt.version, err)
			continue
		}
		if v.String() != tt.version {
			t.Errorf("NextRelease(%q) parsed %s", tt.version, v)
		}
		gotPrev := ""
		if prev != nil {
			gotPrev = prev.Tag()
		}
		if gotPrev != tt.wantPrev {
			t.Errorf("NextRelease(%q) follows %q, want %q", tt.version, gotPrev, tt.wantPrev)
		}
	}
}

// goldenBundleInput is testdata/minimal.in.yaml split as TestGolden splits
// it: everything, and the samples.
func goldenBundleInput(t *testing.T) (manifests, samples []*unstructured.Unstructured) {
	t.Helper()
	objs, err := DecodeFile("testdata/minimal.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetAnnotations()["distribution.test/sample"] == "true" {
			samples = append(samples, o)
		}
	}
	return objs, samples
}

func TestBundleReplaces(t *testing.T) {
	manifests, samples := goldenBundleInput(t)
	opts := BundleOptions{Package: "widget", Version: "1.3.0", Image: "example.com/widget:v1.3.0",
		Channels: []string{"stable"}, DefaultChannel: "stable"}

	b, err := BuildBundle(manifests, samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	if b.CSV.Spec.Replaces != "" {
		t.Errorf("without Replaces the CSV replaces %q", b.CSV.Spec.Replaces)
	}

	opts.Replaces = "1.2.3"
	b, err = BuildBundle(manifests, samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	if b.CSV.Name != "widget.v1.3.0" || b.CSV.Spec.Replaces != "widget.v1.2.3" || b.CSV.Spec.Version.String() != "1.3.0" {
		t.Errorf("CSV %s (version %s) replaces %q, want widget.v1.3.0 (1.3.0) replacing widget.v1.2.3",
			b.CSV.Name, b.CSV.Spec.Version.String(), b.CSV.Spec.Replaces)
	}

	for replaces, wantErr := range map[string]string{
		"1.3.0": "must be older", "1.4.0": "must be older", "v1.2.3": "replaced version",
	} {
		opts.Replaces = replaces
		if _, err := BuildBundle(manifests, samples, opts); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("BuildBundle replacing %q = %v, want an error containing %q", replaces, err, wantErr)
		}
	}
}

func TestSetYAMLScalar(t *testing.T) {
	const values = "# top\nimage:\n  # repository comment\n  repository: coxswain # trailing\n  tag: \"\"\nother:\n  repository: keep\n"
	const chart = "apiVersion: v2\nversion: 0.1.0\nappVersion: \"0.1.0\"\n"
	for _, tt := range []struct {
		name, in, value string
		keys            []string
		want            string
	}{
		{"nested plain keeps comments", values, "ghcr.io/x/coxswain", []string{"image", "repository"},
			"# top\nimage:\n  # repository comment\n  repository: ghcr.io/x/coxswain # trailing\n  tag: \"\"\nother:\n  repository: keep\n"},
		{"plain top level", chart, "0.2.0", []string{"version"}, "apiVersion: v2\nversion: 0.2.0\nappVersion: \"0.1.0\"\n"},
		{"double quoted stays quoted", chart, "0.2.0", []string{"appVersion"}, "apiVersion: v2\nversion: 0.1.0\nappVersion: \"0.2.0\"\n"},
		{"empty quoted", values, "v9", []string{"image", "tag"},
			"# top\nimage:\n  # repository comment\n  repository: coxswain # trailing\n  tag: \"v9\"\nother:\n  repository: keep\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetYAMLScalar([]byte(tt.in), tt.value, tt.keys...)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	for name, keys := range map[string][]string{
		"missing key": {"image", "registry"}, "not a scalar": {"image"}, "not a mapping": {"image", "repository", "x"},
	} {
		if _, err := SetYAMLScalar([]byte(values), "x", keys...); err == nil {
			t.Errorf("%s: SetYAMLScalar(%v) succeeded", name, keys)
		}
	}
	if _, err := SetYAMLScalar([]byte("a: 'single'\n"), "x", "a"); err == nil {
		t.Error("a single-quoted scalar was edited; only plain and double-quoted ones can be")
	}
}
