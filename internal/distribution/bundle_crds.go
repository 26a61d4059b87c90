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
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// collectCRDs adds the install's CRDs to the bundle and returns the CSV's
// owned entries, one per served version, described by the base where it
// has words for them (baseOwned) and by the CRD's schema elsewhere, and
// the owned kinds (group/kind). The base describing a CRD that the install
// lacks is an error.
func collectCRDs(b *Bundle, install []*unstructured.Unstructured, baseOwned []v1alpha1.CRDDescription, consumed keySet) ([]v1alpha1.CRDDescription, map[string]bool, error) {
	described := map[string]v1alpha1.CRDDescription{}
	for _, d := range baseOwned {
		described[d.Name] = d
	}
	ownedKinds := map[string]bool{}
	var owned []v1alpha1.CRDDescription
	for _, o := range FilterKind(install, "CustomResourceDefinition") {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
			return nil, nil, fmt.Errorf("CRD %s: %w", o.GetName(), err)
		}
		desc, ok := described[crd.Name]
		delete(described, crd.Name)
		if !ok {
			desc = v1alpha1.CRDDescription{DisplayName: crd.Spec.Names.Kind, Description: schemaDescription(&crd)}
		}
		owned = append(owned, servedVersions(&crd, desc)...)
		ownedKinds[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = true
		c := o.DeepCopy()
		relabelManagedBy(c, "olm")
		b.CRDs = append(b.CRDs, c)
		consumed[KeyOf(o)] = true
	}
	if len(described) > 0 {
		return nil, nil, fmt.Errorf("the CSV base describes CRDs config/crd does not render: %v", sortedKeys(described))
	}
	sort.Slice(owned, func(i, j int) bool {
		if owned[i].Name != owned[j].Name {
			return owned[i].Name < owned[j].Name
		}
		return owned[i].Version < owned[j].Version
	})
	return owned, ownedKinds, nil
}

// servedVersions are the owned entries of one CRD: desc for each version
// it serves.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition, desc v1alpha1.CRDDescription) []v1alpha1.CRDDescription {
	var out []v1alpha1.CRDDescription
	for _, ver := range crd.Spec.Versions {
		if !ver.Served {
			continue
		}
		d := desc
		d.Name, d.Version, d.Kind = crd.Name, ver.Name, crd.Spec.Names.Kind
		out = append(out, d)
	}
	return out
}

// schemaDescription is the first paragraph of the storage version's
// schema description, on one line, or the kind.
func schemaDescription(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			d := v.Schema.OpenAPIV3Schema.Description
			if i := strings.Index(d, "\n\n"); i > 0 {
				d = d[:i]
			}
			return strings.Join(strings.Fields(d), " ")
		}
	}
	return crd.Spec.Names.Kind
}

// almExamples renders the CSV's alm-examples: the samples of owned kinds
// (group/kind), without namespace, in key order.
func almExamples(examples []*unstructured.Unstructured, ownedKinds map[string]bool) (string, error) {
	var alm []map[string]any
	for _, s := range examples {
		gvk := s.GroupVersionKind()
		if !ownedKinds[gvk.Group+"/"+gvk.Kind] {
			continue
		}
		c := s.DeepCopy()
		c.SetNamespace("")
		alm = append(alm, c.Object)
	}
	sort.Slice(alm, func(i, j int) bool {
		a, b := &unstructured.Unstructured{Object: alm[i]}, &unstructured.Unstructured{Object: alm[j]}
		return KeyOf(a).String() < KeyOf(b).String()
	})
	data, err := json.MarshalIndent(alm, "", "  ")
	if err != nil {
		return "", fmt.Errorf("alm-examples: %w", err)
	}
	return string(data), nil
}
