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

package translator

// granted reports whether a ReferenceGrant in toNS allows the reference.
func (t *translator) granted(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	for _, g := range t.ix.grants[toNS] {
		from := false
		for _, f := range g.Spec.From {
			if string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS {
				from = true
				break
			}
		}
		if !from {
			continue
		}
		for _, to := range g.Spec.To {
			if string(to.Group) == toGroup && string(to.Kind) == toKind && (to.Name == nil || *to.Name == "" || string(*to.Name) == toName) {
				return true
			}
		}
	}
	return false
}
