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

package controller

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayparamsv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	ingressparamsv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
)

// NewScheme returns a scheme with every kind the controller reads or writes:
// the built-in kinds, CustomResourceDefinitions (the HTTPRoute CRD's
// channel), Gateway API, and Coxswain's own CRDs.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	utilruntime.Must(gatewayv1beta1.Install(s))
	utilruntime.Must(gatewayparamsv1alpha1.AddToScheme(s))
	utilruntime.Must(ingressparamsv1alpha1.AddToScheme(s))
	utilruntime.Must(infrav1alpha1.AddToScheme(s))
	return s
}
