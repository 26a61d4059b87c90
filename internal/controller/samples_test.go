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
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

var _ = Describe("config/samples", func() {
	samplesDir := filepath.Join(testkit.RepoRoot(), "config", "samples")

	sampleFiles := func() []string {
		entries, err := os.ReadDir(samplesDir)
		Expect(err).NotTo(HaveOccurred())
		var files []string
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".yaml") || e.Name() == "kustomization.yaml" {
				continue
			}
			// Only Kubernetes objects belong to the kustomization; the
			// directory also holds the proxy's sample snapshot file.
			raw, err := os.ReadFile(filepath.Join(samplesDir, e.Name()))
			Expect(err).NotTo(HaveOccurred())
			if regexp.MustCompile(`(?m)^apiVersion:`).Match(raw) {
				files = append(files, e.Name())
			}
		}
		return files
	}

	It("lists every sample file in its kustomization", func() {
		raw, err := os.ReadFile(filepath.Join(samplesDir, "kustomization.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var k struct {
			Resources []string `json:"resources"`
		}
		Expect(yaml.Unmarshal(raw, &k)).To(Succeed())
		Expect(k.Resources).To(ConsistOf(sampleFiles()))
	})

	It("server-side applies every file, covering every kind Coxswain reads", func() {
		kinds := map[string]bool{}
		for _, name := range sampleFiles() {
			raw, err := os.ReadFile(filepath.Join(samplesDir, name))
			Expect(err).NotTo(HaveOccurred())
			objs, err := testkit.DecodeObjects(raw)
			Expect(err).NotTo(HaveOccurred())
			Expect(objs).NotTo(BeEmpty(), name)
			for _, obj := range objs {
				Expect(testkit.ServerSideApply(ctx, k8sClient, obj)).To(Succeed(), "%s: %s %s", name, obj.GetKind(), obj.GetName())
				kinds[obj.GetKind()] = true
				got := obj.DeepCopy()
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			}
		}
		Expect(kinds).To(HaveKey("CoxswainGatewayParameters"))
		Expect(kinds).To(HaveKey("CoxswainIngressClassParameters"))
		Expect(kinds).To(HaveKey("Project"))
		Expect(kinds).To(HaveKey("GatewayClass"))
		Expect(kinds).To(HaveKey("Gateway"))
		Expect(kinds).To(HaveKey("HTTPRoute"))
		Expect(kinds).To(HaveKey("IngressClass"))
		Expect(kinds).To(HaveKey("Ingress"))
	})
})
