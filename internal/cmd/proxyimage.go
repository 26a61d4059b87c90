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

package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
)

// The proxies the controller provisions run the controller's own image
// unless CoxswainGatewayParameters name another. Where that image comes
// from, first match wins:
//
//  1. --proxy-image, whose default is $COXSWAIN_PROXY_IMAGE. Every install
//     path (config/default, the Helm chart, the OLM bundle) sets that
//     variable to the image of the controller container itself.
//  2. The image of the controller's own container, read from its Pod
//     (POD_NAMESPACE/POD_NAME, the downward API): an install that lost the
//     variable still runs proxies of the image it installed.
//  3. builtinProxyImage, when the controller runs outside a Pod (`make run`).
const (
	builtinProxyImage = "coxswain:latest"
	ownPodReadTimeout = 5 * time.Second
)

// proxyImageSource says where the proxy image was found, for the log.
type proxyImageSource string

const (
	proxyImageFromFlag    proxyImageSource = "--proxy-image or $" + names.ProxyImageEnv
	proxyImageFromOwnPod  proxyImageSource = "the controller's own Pod"
	proxyImageFromBuiltin proxyImageSource = "the built-in default"
)

// ownPod names the Pod the controller runs in; empty when it runs outside
// one.
type ownPod struct{ Namespace, Name string }

func (p ownPod) known() bool { return p.Namespace != "" && p.Name != "" }

// resolveProxyImage returns the proxy image and where it came from, in the
// order above. flagValue is --proxy-image as parsed (its default already
// $COXSWAIN_PROXY_IMAGE). A Pod that is named but cannot be read, or has no
// usable container, is an error: falling back to the built-in image would
// provision proxies the cluster may not be able to pull.
func resolveProxyImage(ctx context.Context, flagValue string, pod ownPod, r client.Reader) (string, proxyImageSource, error) {
	if flagValue != "" {
		return flagValue, proxyImageFromFlag, nil
	}
	if !pod.known() || r == nil {
		return builtinProxyImage, proxyImageFromBuiltin, nil
	}
	img, err := ownContainerImage(ctx, r, pod)
	if err != nil {
		return "", "", err
	}
	return img, proxyImageFromOwnPod, nil
}

// ownContainerImage reads the controller's Pod, retrying transient errors
// for up to ownPodReadTimeout, and returns the image of its coxswain
// container (or of its only container).
func ownContainerImage(ctx context.Context, r client.Reader, pod ownPod) (string, error) {
	var p corev1.Pod
	var lastErr error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 8, Cap: 5 * time.Second},
		func(ctx context.Context) (bool, error) {
			rctx, cancel := context.WithTimeout(ctx, ownPodReadTimeout)
			defer cancel()
			lastErr = r.Get(rctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, &p)
			return lastErr == nil, nil
		})
	if err != nil {
		return "", fmt.Errorf("reading the controller's own Pod %s/%s for the proxy image (set --proxy-image or $%s to skip this): %w",
			pod.Namespace, pod.Name, names.ProxyImageEnv, errors.Join(err, lastErr))
	}
	return containerImage(&p)
}

// containerImage is the image of the Pod's coxswain container, or of its
// only container.
func containerImage(p *corev1.Pod) (string, error) {
	for _, c := range p.Spec.Containers {
		if c.Name == names.ControllerContainerName && c.Image != "" {
			return c.Image, nil
		}
	}
	if len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image != "" {
		return p.Spec.Containers[0].Image, nil
	}
	return "", fmt.Errorf("pod %s/%s has no container %q to take the proxy image from (set --proxy-image or $%s)",
		p.Namespace, p.Name, names.ControllerContainerName, names.ProxyImageEnv)
}

// controllerProxyImage resolves the proxy image for `serve controller` and
// logs where it came from. When an explicit image differs from the
// controller's own (for example an overlay changed the controller image but
// not $COXSWAIN_PROXY_IMAGE), it says so: the explicit image is used.
func controllerProxyImage(ctx context.Context, flagValue string, r client.Reader) (string, error) {
	log := ctrl.Log.WithName("controller")
	pod := ownPod{Namespace: os.Getenv("POD_NAMESPACE"), Name: os.Getenv("POD_NAME")}
	img, src, err := resolveProxyImage(ctx, flagValue, pod, r)
	if err != nil {
		return "", err
	}
	log.Info("proxy image", "image", img, "from", string(src))
	if src == proxyImageFromFlag && pod.known() {
		var p corev1.Pod
		if err := r.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, &p); err == nil {
			if own, err := containerImage(&p); err == nil && own != img {
				log.Info("the proxy image differs from the controller's own image; proxies run the proxy image",
					"proxyImage", img, "controllerImage", own)
			}
		}
	}
	return img, nil
}
