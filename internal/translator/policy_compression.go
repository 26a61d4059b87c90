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
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// defaultCompressionMinBytes is the smallest declared body compressed
// unless a Compression says otherwise.
const defaultCompressionMinBytes = 1024

// compileCompressions compiles every Compression (default algorithms br,
// zstd, gzip).
func compileCompressions(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindCompression, t.res.Compressions,
		func(p *gatewayv1alpha1.Compression) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.Compression, p *policy) {
			c, msg := compression(o.Spec.Algorithms, ptr.Deref(o.Spec.MinBytes, defaultCompressionMinBytes), o.Spec.ContentTypes)
			if msg != "" {
				p.invalidf("%s", msg)
				return
			}
			p.route = func(r *snapshot.Route) { v := c; r.Compression = &v }
		})
}

// compression validates compression settings; the message names the bad
// field.
func compression(algs []gatewayv1alpha1.CompressionAlgorithm, minBytes int64, types []string) (snapshot.Compression, string) {
	c := snapshot.Compression{MinBytes: minBytes, ContentTypes: types}
	if minBytes < 0 {
		return c, "spec.minBytes: must not be negative"
	}
	if len(algs) == 0 {
		algs = []gatewayv1alpha1.CompressionAlgorithm{"br", "zstd", "gzip"}
	}
	seen := map[string]bool{}
	for _, a := range algs {
		switch a {
		case "br", "zstd", "gzip":
		default:
			return c, "spec.algorithms: " + string(a) + " is not br, zstd or gzip"
		}
		if !seen[string(a)] {
			seen[string(a)] = true
			c.Algorithms = append(c.Algorithms, string(a))
		}
	}
	for _, ct := range types {
		if ct == "" || strings.ContainsAny(ct, " ,;") {
			return c, "spec.contentTypes: " + strconv.Quote(ct) + " is not a media type or prefix"
		}
	}
	return c, ""
}
