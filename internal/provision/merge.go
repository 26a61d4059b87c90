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
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Strategic-merge directives.
const (
	directivePatch         = "$patch"
	directiveReplace       = "replace"
	directiveDelete        = "delete"
	directiveMerge         = "merge"
	tolerationsField       = "tolerations"
	setElementOrderPrefix  = "$setElementOrder/"
	defaultTolerationOpKey = string(corev1.TolerationOpEqual)
)

// MergePodTemplate applies the podTemplate layers, in order, onto base with
// strategic-merge semantics (kubectl apply's, but for tolerations, below),
// and returns the merged template
// plus the fields that were dropped because core/v1 does not know them.
//
// Lists merge as core/v1's patch strategy declares (containers,
// initContainers, volumes, env, imagePullSecrets by name; container ports by
// containerPort; volumeMounts by mountPath), `$patch: delete|replace|merge`
// and `$retainKeys` are honoured, and — unlike stock strategic merge, which
// replaces tolerations atomically — tolerations merge by (key, operator),
// where an empty operator means Equal. A toleration element may carry
// `$patch: delete` to remove its match, and an element `{$patch: replace}`
// replaces the whole list with the other elements.
//
// A patch that cannot be applied (wrong types, an element without its merge
// key) is an error naming the layer's parameters object; nothing is half
// applied.
func MergePodTemplate(base corev1.PodTemplateSpec, layers []Layer) (corev1.PodTemplateSpec, []string, error) {
	out := *base.DeepCopy()
	var dropped []string
	for _, l := range layers {
		if l.Patch == nil {
			continue
		}
		if m := l.Patch.Metadata; m != nil {
			if len(m.Labels) > 0 && out.Labels == nil {
				out.Labels = map[string]string{}
			}
			for k, v := range m.Labels {
				out.Labels[k] = v
			}
			if len(m.Annotations) > 0 && out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			for k, v := range m.Annotations {
				out.Annotations[k] = v
			}
		}
		if l.Patch.Spec == nil {
			continue
		}
		patch, err := rawToMap(l.Patch.Spec)
		if err != nil {
			return out, nil, fmt.Errorf("podTemplate.spec of %s %s: %w", names.ParametersKind, l.Source, err)
		}
		if patch == nil {
			continue
		}
		spec, unknown, err := MergePodSpec(out.Spec, patch)
		if err != nil {
			return out, nil, fmt.Errorf("podTemplate.spec of %s %s: %w", names.ParametersKind, l.Source, err)
		}
		for _, u := range unknown {
			dropped = append(dropped, fmt.Sprintf("%s %s: podTemplate.spec: %s", names.ParametersKind, l.Source, u))
		}
		out.Spec = spec
	}
	return out, dropped, nil
}

// MergePodSpec strategic-merges one patch (a partial PodSpec as a JSON map)
// onto spec; see MergePodTemplate. It returns the unknown fields it dropped.
func MergePodSpec(spec corev1.PodSpec, patch map[string]interface{}) (corev1.PodSpec, []string, error) {
	orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec.DeepCopy())
	if err != nil {
		return spec, nil, err
	}
	// The merge edits the patch in place (tolerations); the caller's map
	// stays untouched. patch holds JSON values, as utiljson.Unmarshal
	// produces them.
	patch = runtime.DeepCopyJSON(patch)
	if d, _ := patch[directivePatch].(string); d != directiveReplace && d != directiveDelete {
		if err := mergeTolerationsInto(orig, patch); err != nil {
			return spec, nil, err
		}
	}
	merged, err := strategicpatch.StrategicMergeMapPatch(orig, patch, corev1.PodSpec{})
	if err != nil {
		return spec, nil, err
	}
	var out corev1.PodSpec
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(merged, &out, true)
	var unknown []string
	if err != nil {
		strict, ok := runtime.AsStrictDecodingError(err)
		if !ok {
			return spec, nil, err
		}
		for _, e := range strict.Errors() {
			unknown = append(unknown, e.Error())
		}
	}
	return out, unknown, nil
}

// mergeTolerationsInto merges patch's tolerations into orig by (key,
// operator) and removes them from patch, so the strategic merge that follows
// leaves orig's merged list alone.
func mergeTolerationsInto(orig, patch map[string]interface{}) error {
	delete(patch, setElementOrderPrefix+tolerationsField)
	raw, ok := patch[tolerationsField]
	if !ok {
		return nil
	}
	delete(patch, tolerationsField)
	if raw == nil {
		delete(orig, tolerationsField)
		return nil
	}
	items, ok := raw.([]interface{})
	if !ok {
		return fmt.Errorf("tolerations: expected a list, got %T", raw)
	}
	var current []interface{}
	if c, ok := orig[tolerationsField].([]interface{}); ok {
		current = c
	}
	merged, err := MergeTolerations(current, items)
	if err != nil {
		return err
	}
	if len(merged) == 0 {
		delete(orig, tolerationsField)
		return nil
	}
	orig[tolerationsField] = merged
	return nil
}

// MergeTolerations merges patch tolerations into current (both as JSON
// maps) by (key, operator): a patch element replaces the fields of its match
// (a null field removes it) or is appended; `$patch: delete` on an element
// removes its match; an element `{$patch: replace}` makes the result exactly
// the other patch elements.
func MergeTolerations(current, patch []interface{}) ([]interface{}, error) {
	type elem = map[string]interface{}
	var plain []elem
	replace := false
	for i, p := range patch {
		m, ok := p.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("tolerations[%d]: expected an object, got %T", i, p)
		}
		if d, ok := m[directivePatch]; ok {
			switch d {
			case directiveReplace:
				if len(m) == 1 {
					replace = true
					continue
				}
			case directiveDelete, directiveMerge:
			default:
				return nil, fmt.Errorf("tolerations[%d]: unknown %s directive %v", i, directivePatch, d)
			}
		}
		plain = append(plain, m)
	}
	out := make([]interface{}, 0, len(current)+len(plain))
	if !replace {
		for _, c := range current {
			if m, ok := c.(map[string]interface{}); ok {
				out = append(out, copyMap(m))
			}
		}
	}
	for i, m := range plain {
		k, err := tolerationKey(m)
		if err != nil {
			return nil, fmt.Errorf("tolerations[%d]: %w", i, err)
		}
		idx := -1
		for j, c := range out {
			ck, err := tolerationKey(c.(map[string]interface{}))
			if err == nil && ck == k {
				idx = j
				break
			}
		}
		if m[directivePatch] == directiveDelete {
			if idx >= 0 {
				out = append(out[:idx], out[idx+1:]...)
			}
			continue
		}
		if idx < 0 {
			n := map[string]interface{}{}
			for f, v := range m {
				if v != nil && !strings.HasPrefix(f, "$") {
					n[f] = v
				}
			}
			out = append(out, n)
			continue
		}
		target := out[idx].(map[string]interface{})
		for f, v := range m {
			switch {
			case strings.HasPrefix(f, "$"):
			case v == nil:
				delete(target, f)
			default:
				target[f] = v
			}
		}
	}
	return out, nil
}

func tolerationKey(m map[string]interface{}) (string, error) {
	key, ok := m["key"].(string)
	if !ok && m["key"] != nil {
		return "", fmt.Errorf("key: expected a string, got %T", m["key"])
	}
	op, ok := m["operator"].(string)
	if !ok && m["operator"] != nil {
		return "", fmt.Errorf("operator: expected a string, got %T", m["operator"])
	}
	if op == "" {
		op = defaultTolerationOpKey
	}
	return key + "\x00" + op, nil
}

func copyMap(m map[string]interface{}) map[string]interface{} {
	n := make(map[string]interface{}, len(m))
	for k, v := range m {
		n[k] = v
	}
	return n
}

func rawToMap(raw *runtime.RawExtension) (map[string]interface{}, error) {
	var b []byte
	switch {
	case raw == nil:
		return nil, nil
	case len(raw.Raw) > 0:
		b = raw.Raw
	case raw.Object != nil:
		var err error
		if b, err = json.Marshal(raw.Object); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	if strings.TrimSpace(string(b)) == "null" {
		return nil, nil
	}
	var m map[string]interface{}
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}
