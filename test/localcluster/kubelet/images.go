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
	"fmt"
	"strings"
)

// Binaries maps the images the local kubelet can run to local binaries.
type Binaries struct {
	// EchoBasic is the echo-basic binary built from
	// sigs.k8s.io/gateway-api/conformance/echo-basic; it runs images whose
	// name contains "echo-basic".
	EchoBasic string
	// Coxswain is our binary; it runs images named coxswain (any registry,
	// any tag CoxswainTags does not name).
	Coxswain string
	// CoreDNS is a CoreDNS build (test/localcluster/coredns: the plugins
	// the Gateway API conformance suite's Corefile uses); it runs images
	// named coredns (registry.k8s.io/coredns/coredns:v1.12.2, the suite's
	// UDP backend).
	CoreDNS string
	// CoxswainTags runs other builds of Coxswain side by side: the image
	// coxswain:<tag> runs CoxswainTags[tag]. Upgrade tests install one
	// release's image and move to another's.
	CoxswainTags map[string]string
	// Images runs other programs as pods: an image whose last path
	// element, without tag or digest, is a key runs that key's binary
	// (for example "olm" for quay.io/operator-framework/olm:v0.38.0, the
	// OLM operator the OLM end-to-end test runs). It is consulted after
	// echo-basic, coxswain and coredns.
	Images map[string]string
}

// launchPlan is the pure result of mapping one container: the local
// binary that runs for it.
type launchPlan struct {
	path string   // the mapped binary
	args []string // argv[1:]
	// defaultPort is the TCP port readiness waits for when the container
	// declares none (echo-basic listens on 3000, CoreDNS on 53, without
	// declaring it); defaultPortEnv names an environment variable that
	// overrides it (echo-basic's HTTP_PORT).
	defaultPort    int32
	defaultPortEnv string
}

// imageName is the last path element of an image reference without tag or
// digest: "registry.k8s.io/gateway-api/echo-basic:v1.5.1" -> "echo-basic".
func imageName(image string) string {
	ref := image
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.IndexByte(ref, ':'); i >= 0 {
		ref = ref[:i]
	}
	return ref
}

// imageTag is the tag of an image reference ("" for none or a digest):
// "ghcr.io/coxswain-go/coxswain:v0.1.0" -> "v0.1.0".
func imageTag(image string) string {
	ref := image
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		return ""
	}
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.IndexByte(ref, ':'); i >= 0 {
		return ref[i+1:]
	}
	return ""
}

// planLaunch maps a container's image, command and args to what the local
// kubelet runs. command replaces the image's entrypoint in Kubernetes; here
// the entrypoint is the mapped binary, so command[0] is dropped and
// command[1:] come before args.
func (b Binaries) planLaunch(image string, command, args []string) (launchPlan, error) {
	argv := append([]string{}, args...)
	if len(command) > 0 {
		argv = append(append([]string{}, command[1:]...), args...)
	}
	name := imageName(image)
	switch {
	case strings.Contains(image, "echo-basic"):
		if b.EchoBasic == "" {
			return launchPlan{}, fmt.Errorf("image %q runs the echo-basic binary, but none is configured (set --echo-basic or LOCALCLUSTER_ECHO_BASIC)", image)
		}
		return launchPlan{path: b.EchoBasic, args: argv, defaultPort: 3000, defaultPortEnv: "HTTP_PORT"}, nil
	case name == "coxswain" && b.CoxswainTags[imageTag(image)] != "":
		return launchPlan{path: b.CoxswainTags[imageTag(image)], args: argv}, nil
	case name == "coxswain":
		if b.Coxswain == "" {
			return launchPlan{}, fmt.Errorf("image %q runs the coxswain binary, but none is configured (set --coxswain or LOCALCLUSTER_COXSWAIN)", image)
		}
		return launchPlan{path: b.Coxswain, args: argv}, nil
	case name == "coredns":
		if b.CoreDNS == "" {
			return launchPlan{}, fmt.Errorf("image %q runs the coredns binary, but none is configured (set --coredns or LOCALCLUSTER_COREDNS; make coredns builds it)", image)
		}
		// CoreDNS serves DNS on 53 over UDP and TCP; readiness connects
		// to the TCP side.
		return launchPlan{path: b.CoreDNS, args: argv, defaultPort: 53}, nil
	case b.Images[name] != "":
		return launchPlan{path: b.Images[name], args: argv}, nil
	default:
		return launchPlan{}, fmt.Errorf("image %q has no local binary: the local kubelet runs only echo-basic, coxswain and coredns images and those Binaries.Images names", image)
	}
}
