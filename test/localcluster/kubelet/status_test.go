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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/test/localcluster/network"
)

func TestStatusFailedPod(t *testing.T) {
	n, _ := network.New("cxbr0", "10.244.0.1/16")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	r := newPodRunner(&Kubelet{net: n}, pod)
	r.failPhase, r.reason, r.message = corev1.PodFailed, ReasonUnsupportedImage, "no binary"
	st := r.buildStatus(corev1.PodStatus{})
	if st.Phase != corev1.PodFailed || st.Reason != ReasonUnsupportedImage || st.Message != "no binary" ||
		st.ContainerStatuses[0].State.Waiting == nil || st.ContainerStatuses[0].State.Waiting.Reason != ReasonUnsupportedImage {
		t.Errorf("status: %+v", st)
	}
}
