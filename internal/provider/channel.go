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

package provider

import (
	"context"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Some Gateway API features need fields only the experimental channel's
// CRDs have (HTTPRoute rules[].retry): on the standard channel the
// apiserver drops them, so a class must not advertise those features. The
// channel is the annotation every Gateway API CRD carries; the provider
// reads the HTTPRoute CRD's with a live GET (the controller may get that
// one CRD, nothing more), at most once a minute.

// HTTPRouteCRDName is the CRD whose channel annotation the provider reads.
const HTTPRouteCRDName = "httproutes.gateway.networking.k8s.io"

// channelAnnotation holds a Gateway API CRD's release channel.
const channelAnnotation = "gateway.networking.k8s.io/channel"

// channelRefresh bounds how often the channel is read again.
const channelRefresh = time.Minute

// channelReader reads and remembers the Gateway API channel.
type channelReader struct {
	reader client.Reader
	mu     sync.Mutex
	read   time.Time
	value  string
}

// channel is the HTTPRoute CRD's channel ("standard", "experimental"), or
// "" when it cannot be read (no reader, no such CRD, no permission).
func (c *channelReader) channel(ctx context.Context) string {
	if c == nil || c.reader == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.IsZero() && time.Since(c.read) < channelRefresh {
		return c.value
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.reader.Get(ctx, types.NamespacedName{Name: HTTPRouteCRDName}, crd); err != nil {
		c.value = ""
	} else {
		c.value = crd.Annotations[channelAnnotation]
	}
	c.read = time.Now()
	return c.value
}
