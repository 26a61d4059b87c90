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

import (
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compilePathRewriteRegexes compiles every PathRewriteRegex: an
// ExtensionRef filter only (it has no targetRefs), replacing a rule's
// URLRewrite path.
func compilePathRewriteRegexes(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindPathRewriteRegex, t.res.PathRewriteRegexes,
		func(p *gatewayv1alpha1.PathRewriteRegex) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, nil
		},
		func(o *gatewayv1alpha1.PathRewriteRegex, p *policy) {
			p.httpOnly = true
			if o.Spec.Pattern == "" { // what the CRD refuses, should it be bypassed
				p.invalidf("spec.pattern: must not be empty")
				return
			}
			if _, err := regexp.Compile(o.Spec.Pattern); err != nil {
				p.invalidf("spec.pattern: %v", err)
				return
			}
			if strings.ContainsAny(o.Spec.Substitution, "?#\r\n\x00") {
				p.invalidf("spec.substitution: must not contain ?, # or control characters")
				return
			}
			pm := snapshot.PathModifier{Type: snapshot.ReplaceRegex, Value: o.Spec.Substitution, Pattern: o.Spec.Pattern}
			p.route = func(r *snapshot.Route) {
				rw := snapshot.URLRewrite{}
				if r.Rewrite != nil {
					rw = *r.Rewrite
				}
				v := pm
				rw.Path = &v
				r.Rewrite = &rw
			}
		})
}
