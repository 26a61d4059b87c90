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
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/coxswain-go/coxswain/test/localcluster/network"
)

// markHostsDirty asks hostsLoop for a sync (Service or EndpointSlice event).
func (k *Kubelet) markHostsDirty() {
	select {
	case k.hostsDirty <- struct{}{}:
	default:
	}
}

// syncServices hands the informer caches to ServicesChanged (the service
// proxy) and recomputes the Service address table (for pods' /etc/hosts);
// it reports whether the table changed.
func (k *Kubelet) syncServices() bool {
	svcs, err1 := k.factory.Core().V1().Services().Lister().List(labels.Everything())
	slices, err2 := k.factory.Discovery().V1().EndpointSlices().Lister().List(labels.Everything())
	if err1 != nil || err2 != nil {
		return false
	}
	if k.servicesChanged != nil {
		k.servicesChanged(svcs, slices)
	}
	addrs := network.ServiceAddresses(svcs, slices)
	k.mu.Lock()
	defer k.mu.Unlock()
	if maps.Equal(addrs, k.svcAddrs) {
		return false
	}
	k.svcAddrs = addrs
	return true
}

// hostsFor renders a pod's /etc/hosts from the current table.
func (k *Kubelet) hostsFor(namespace, name, ip string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return network.HostsFile(namespace, name, ip, k.svcAddrs)
}

// hostsLoop rewrites every pod's /etc/hosts when Services or EndpointSlices
// change (debounced).
func (k *Kubelet) hostsLoop() {
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-k.hostsDirty:
		}
		select {
		case <-k.ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		if !k.syncServices() {
			continue
		}
		for _, r := range k.runnerList() {
			r.writeHosts()
		}
	}
}
