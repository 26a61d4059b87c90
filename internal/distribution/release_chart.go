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
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// packageChart copies charts/coxswain, refreshes its generated files,
// stamps the release into it (version and appVersion, so the image tag
// defaults to v<version>, and the release's image repository), runs
// `helm lint --strict` on it and packages it into the release directory.
func packageChart(opts ReleaseOptions, a *ReleaseArtifacts, generated map[string][]byte, version string) error {
	stage, err := os.MkdirTemp("", "coxswain-release-chart-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(stage) }()
	chart := filepath.Join(stage, "coxswain")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(opts.Root, ChartDir))); err != nil {
		return fmt.Errorf("copying %s: %w", ChartDir, err)
	}
	if err := WriteTree(chart, generated, chartOwned); err != nil {
		return err
	}
	edits := []struct {
		file, value string
		path        []string
	}{
		{"Chart.yaml", version, []string{"version"}},
		{"Chart.yaml", version, []string{"appVersion"}},
		{"values.yaml", opts.ImageRepo, []string{"image", "repository"}},
	}
	for _, e := range edits {
		if err := editYAMLFile(filepath.Join(chart, e.file), e.value, e.path...); err != nil {
			return fmt.Errorf("chart %s: %w", e.file, err)
		}
	}
	if _, err := runTool(stage, opts.Helm, "lint", "--strict", chart); err != nil {
		return fmt.Errorf("the release chart does not lint: %w", err)
	}
	if _, err := runTool(stage, opts.Helm, "package", chart, "--destination", a.Dir); err != nil {
		return err
	}
	if _, err := os.Stat(a.Chart); err != nil {
		return fmt.Errorf("helm package did not write %s: %w", a.Chart, err)
	}
	return nil
}

func editYAMLFile(path, value string, keys ...string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	data, err = SetYAMLScalar(data, value, keys...)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644) //nolint:gosec // G306: a chart file, world-readable like the chart
}

// SetYAMLScalar replaces the scalar at the mapping keys path in a YAML
// document with value, changing nothing else: the node is located with a
// YAML parser and its token rewritten in place, so comments and layout
// (which `helm show values` prints to users) survive, as re-encoding would
// not guarantee. The token keeps its quoting style.
func SetYAMLScalar(data []byte, value string, keys ...string) ([]byte, error) {
	node, err := lookupScalar(data, keys)
	if err != nil {
		return nil, err
	}
	oldToken, newToken := node.Value, value
	switch node.Style {
	case 0:
	case yaml.DoubleQuotedStyle:
		oldToken, newToken = strconv.Quote(node.Value), strconv.Quote(value)
	default:
		return nil, fmt.Errorf("%v: only plain or double-quoted scalars can be edited in place", keys)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	line, start := node.Line-1, node.Column-1
	if line >= len(lines) || start+len(oldToken) > len(lines[line]) || string(lines[line][start:start+len(oldToken)]) != oldToken {
		return nil, fmt.Errorf("%v: the value is not written as %s on line %d", keys, oldToken, node.Line)
	}
	edited := append(append(append([]byte{}, lines[line][:start]...), newToken...), lines[line][start+len(oldToken):]...)
	lines[line] = edited
	return bytes.Join(lines, nil), nil
}

// lookupScalar finds the scalar node at the mapping keys path.
func lookupScalar(data []byte, keys []string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("not a single YAML document")
	}
	n := doc.Content[0]
	for i, key := range keys {
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%v is not a mapping", keys[:i])
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == key {
				next = n.Content[j+1]
			}
		}
		if next == nil {
			return nil, fmt.Errorf("no key %v", keys[:i+1])
		}
		n = next
	}
	if n.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("%v is not a scalar", keys)
	}
	return n, nil
}
