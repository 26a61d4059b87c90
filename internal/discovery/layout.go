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

package discovery

import (
	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// RichestLayout is the richest resource layout this build reads and
// serves; a stream uses the richest one both of its ends read.
const RichestLayout = snapshot.LayoutVersionBuckets

// LayoutFromProto is the layout to serve a proxy that reads up to l:
// l itself, or RichestLayout for a proxy newer than this build.
func LayoutFromProto(l discoveryv1.Layout) snapshot.Layout {
	switch {
	case l >= discoveryv1.Layout_LAYOUT_VERSION_BUCKETS:
		return snapshot.LayoutVersionBuckets
	case l == discoveryv1.Layout_LAYOUT_VIRTUAL_HOSTS:
		return snapshot.LayoutVirtualHosts
	}
	return snapshot.LayoutListeners
}

// LayoutToProto is the wire name of l.
func LayoutToProto(l snapshot.Layout) discoveryv1.Layout {
	switch l {
	case snapshot.LayoutVersionBuckets:
		return discoveryv1.Layout_LAYOUT_VERSION_BUCKETS
	case snapshot.LayoutVirtualHosts:
		return discoveryv1.Layout_LAYOUT_VIRTUAL_HOSTS
	}
	return discoveryv1.Layout_LAYOUT_LISTENERS
}
