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

package writer

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// classStamp is a GatewayClass whose status a round found to be what it
// desired: the object's resourceVersion then, and the desired lists. A
// round that reads the same object and desires equal lists has nothing
// to compare: under endpoint churn, copying the class read once more and
// comparing its status (the supported features are a long list) at each
// of 100 rounds a second was two thirds of the writer's work, and so it
// was at every route change, whose translation makes the lists anew.
// Comparing the lists themselves is a walk of a few dozen names. Any
// change to the object (another writer's edit included) gives it another
// resourceVersion.
type classStamp struct {
	resourceVersion string
	conditions      []metav1.Condition
	features        []gwv1.SupportedFeature
}

// stampClass is the stamp of obj's resourceVersion and d's lists.
func stampClass(resourceVersion string, d *translator.GatewayClassStatus) classStamp {
	return classStamp{resourceVersion: resourceVersion, conditions: d.Status.Conditions, features: d.Status.SupportedFeatures}
}

// same reports whether s and o stamp the same object and equal lists.
func (s classStamp) same(o classStamp) bool {
	return s.resourceVersion == o.resourceVersion && slices.Equal(s.conditions, o.conditions) && slices.Equal(s.features, o.features)
}
