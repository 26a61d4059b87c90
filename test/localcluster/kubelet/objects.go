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

package kubelet

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// objectSource fetches the Secrets and ConfigMaps env and volumes refer to.
// A missing object is reported as found == false, not as an error.
type objectSource interface {
	Secret(namespace, name string) (s *corev1.Secret, found bool, err error)
	ConfigMap(namespace, name string) (cm *corev1.ConfigMap, found bool, err error)
}

// tokenSource issues a service-account token for the pod (TokenRequest).
type tokenSource func(pod *corev1.Pod, audience string, expirationSeconds int64) (string, error)

// apiObjects reads Secrets and ConfigMaps from the API.
type apiObjects struct {
	ctx    context.Context
	client kubernetes.Interface
}

func (o apiObjects) Secret(ns, name string) (*corev1.Secret, bool, error) {
	s, err := o.client.CoreV1().Secrets(ns).Get(o.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return s, err == nil, err
}

func (o apiObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, bool, error) {
	cm, err := o.client.CoreV1().ConfigMaps(ns).Get(o.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return cm, err == nil, err
}

// token issues a bound service-account token (TokenRequest API).
func (k *Kubelet) token(pod *corev1.Pod, audience string, exp int64) (string, error) {
	ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
	defer cancel()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(exp),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	return tr.Status.Token, nil
}
