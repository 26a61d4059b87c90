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

package network

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// There is no cluster DNS and no kube-proxy. Instead, each pod gets its own
// /etc/hosts (through `ip netns exec`, which bind-mounts
// /etc/netns/<netns>/hosts over /etc/hosts) naming every Service that has a
// ClusterIP or a ready endpoint: "<svc>.<ns>.svc.cluster.local",
// "<svc>.<ns>.svc", "<svc>.<ns>" and, for Services in the pod's namespace,
// "<svc>" resolve to the ClusterIP (which the harness's service proxy
// serves, see package serviceproxy) or, for a headless Service, to the
// first ready endpoint address (sorted). The kubelet rewrites the files in
// place when Services or EndpointSlices change, and a resolv.conf pointing
// at the pod's loopback makes other lookups fail at once instead of timing
// out.
const netnsEtc = "/etc/netns"

// ServiceAddresses maps "<namespace>/<name>" of each Service to its
// ClusterIP (served by the service proxy), or for a headless Service to
// the first ready endpoint address of its EndpointSlices.
func ServiceAddresses(services []*corev1.Service, slices []*discoveryv1.EndpointSlice) map[string]string {
	ready := map[string][]string{}
	for _, s := range slices {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		key := s.Namespace + "/" + svc
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			ready[key] = append(ready[key], e.Addresses...)
		}
	}
	out := map[string]string{}
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
			out[key] = ip // served by the harness's service proxy
			continue
		}
		addrs := ready[key]
		if len(addrs) == 0 {
			continue
		}
		sort.Strings(addrs)
		out[key] = addrs[0]
	}
	return out
}

// HostsFile renders a pod's /etc/hosts.
func HostsFile(podNamespace, podName, podIP string, services map[string]string) string {
	var b strings.Builder
	b.WriteString("# written by the coxswain local kubelet\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if podIP != "" {
		fmt.Fprintf(&b, "%s\t%s\n", podIP, podName)
	}
	keys := make([]string, 0, len(services))
	for k := range services {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		names := []string{name + "." + ns + ".svc.cluster.local", name + "." + ns + ".svc", name + "." + ns}
		if ns == podNamespace && name != podName {
			names = append(names, name)
		}
		fmt.Fprintf(&b, "%s\t%s\n", services[k], strings.Join(names, " "))
	}
	return b.String()
}

// resolvConf sends lookups of names not in the hosts file to the pod's own
// loopback, where nothing answers, so they fail at once.
const resolvConf = "# written by the coxswain local kubelet: Service names are in /etc/hosts\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n"

// WriteNetnsEtc writes (in place, so bind mounts see the change) the
// namespace's hosts and resolv.conf.
func WriteNetnsEtc(netns, hosts string) error {
	dir := filepath.Join(netnsEtc, netns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeInPlace(filepath.Join(dir, "hosts"), hosts); err != nil {
		return err
	}
	return writeInPlace(filepath.Join(dir, "resolv.conf"), resolvConf)
}

// writeInPlace rewrites a file keeping its inode, unless the content is
// already the same.
func writeInPlace(path, content string) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == content {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// removeNetnsEtc removes a namespace's /etc/netns directory.
func removeNetnsEtc(netns string) {
	if netns == "" || strings.ContainsRune(netns, '/') {
		return
	}
	_ = os.RemoveAll(filepath.Join(netnsEtc, netns))
}
