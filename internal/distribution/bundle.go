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

package distribution

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Bundle annotation keys (registry+v1), shared by
// metadata/annotations.yaml and the LABELs of bundle.Dockerfile.
const (
	AnnotationMediaType      = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifests      = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationMetadata       = "operators.operatorframework.io.bundle.metadata.v1"
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"

	MediaTypeRegistryV1 = "registry+v1"
	ManifestsDir        = "manifests/"
	MetadataDir         = "metadata/"

	// CSV annotations.
	annotationALMExamples         = "alm-examples"
	annotationContainerImage      = "containerImage"
	annotationSuggestedNSTemplate = "operatorframework.io/suggested-namespace-template"
)

// excludedKinds are rendered by config/default but cannot travel in a
// registry+v1 bundle: OLM creates the namespace itself, and it does not
// install admission policies (they are documented in the CSV description).
var excludedKinds = map[string]bool{
	"Namespace":                        true,
	"ValidatingAdmissionPolicy":        true,
	"ValidatingAdmissionPolicyBinding": true,
}

// SupportedBundleKinds are the kinds OLM installs from bundle/manifests
// besides the CSV and CRDs (the registry+v1 allow list).
var SupportedBundleKinds = map[string]bool{
	"ClusterServiceVersion": true, "CustomResourceDefinition": true,
	"Secret": true, "ConfigMap": true, "ServiceAccount": true, "Service": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	"PrometheusRule": true, "ServiceMonitor": true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true, "NetworkPolicy": true,
	"ConsoleYAMLSample": true, "ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true,
}

// BundleOptions parameterise the bundle.
type BundleOptions struct {
	Package string // package name, e.g. "coxswain"
	Version string // semver without "v", e.g. "0.1.0"
	Image   string // controller image
	// Replaces is the version (semver without "v") of the release this
	// bundle upgrades, written as the CSV's spec.replaces; empty for none.
	Replaces       string
	Channels       []string
	DefaultChannel string
	// Icon is an SVG image (config/manifests/bases/icon.svg).
	Icon []byte
}

// semver checks the options and returns the parsed version.
func (o BundleOptions) semver() (semver.Version, error) {
	v, err := semver.Parse(o.Version)
	if err != nil {
		return v, fmt.Errorf("bundle version %q: %w", o.Version, err)
	}
	if o.Package == "" || o.Image == "" || len(o.Channels) == 0 || o.DefaultChannel == "" {
		return v, fmt.Errorf("bundle options need a package, image, channels and default channel")
	}
	if !slices.Contains(o.Channels, o.DefaultChannel) {
		return v, fmt.Errorf("default channel %q is not one of the channels %v", o.DefaultChannel, o.Channels)
	}
	if o.Replaces != "" {
		prev, err := semver.Parse(o.Replaces)
		if err != nil {
			return v, fmt.Errorf("replaced version %q: %w", o.Replaces, err)
		}
		// OLM upgrades along replaces; one that points at the same or a
		// newer version would be a loop or a downgrade.
		if !prev.LT(v) {
			return v, fmt.Errorf("bundle %s cannot replace %s: it must be older", v, prev)
		}
	}
	return v, nil
}

// CSVName is the name OLM knows a version of the package by:
// <package>.v<version>, e.g. coxswain.v0.1.0.
func CSVName(pkg, version string) string {
	return pkg + ".v" + version
}

// annotations are the bundle's metadata/annotations.yaml.
func (o BundleOptions) annotations() map[string]string {
	return map[string]string{
		AnnotationMediaType:      MediaTypeRegistryV1,
		AnnotationManifests:      ManifestsDir,
		AnnotationMetadata:       MetadataDir,
		AnnotationPackage:        o.Package,
		AnnotationChannels:       strings.Join(o.Channels, ","),
		AnnotationDefaultChannel: o.DefaultChannel,
	}
}

// Bundle is a registry+v1 operator bundle.
type Bundle struct {
	CSV *v1alpha1.ClusterServiceVersion
	// CRDs and Others are written to manifests/ as they are.
	CRDs   []*unstructured.Unstructured
	Others []*unstructured.Unstructured
	// Annotations are metadata/annotations.yaml.
	Annotations map[string]string
	// Excluded lists what config/manifests renders that a bundle cannot
	// carry (see excludedKinds). It is not written.
	Excluded []Key
}

// keySet is the set of install objects the CSV expresses (RBAC bound to
// the operator's ServiceAccounts, CRDs): they do not travel beside it.
type keySet map[Key]bool

// BuildBundle builds the bundle from `kustomize build config/manifests`
// (manifests: the CSV base, config/default and config/samples) and
// `kustomize build config/samples` (samples), which tells the samples apart
// from the install objects.
func BuildBundle(manifests, samples []*unstructured.Unstructured, opts BundleOptions) (*Bundle, error) {
	v, err := opts.semver()
	if err != nil {
		return nil, err
	}
	base, install, examples, err := splitManifests(manifests, samples)
	if err != nil {
		return nil, err
	}
	csv := newCSV(base, opts, v)
	deployments, deploymentSAs, err := deploymentSpecs(install, opts.Image)
	if err != nil {
		return nil, err
	}
	consumed := keySet{}
	strategy, err := rbacPermissions(install, deploymentSAs, consumed)
	if err != nil {
		return nil, err
	}
	strategy.DeploymentSpecs = deployments
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{StrategyName: v1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}

	b := &Bundle{Annotations: opts.annotations()}
	owned, ownedKinds, err := collectCRDs(b, install, base.Spec.CustomResourceDefinitions.Owned, consumed)
	if err != nil {
		return nil, err
	}
	csv.Spec.CustomResourceDefinitions.Owned = owned
	if csv.Annotations[annotationALMExamples], err = almExamples(examples, ownedKinds); err != nil {
		return nil, err
	}
	if err := collectBeside(b, csv, install, deploymentSAs, consumed); err != nil {
		return nil, err
	}
	SortObjects(b.CRDs)
	SortObjects(b.Others)
	b.CSV = csv
	return b, nil
}

// splitManifests sorts `kustomize build config/manifests` into the CSV
// base, the install objects (copies) and the samples.
func splitManifests(manifests, samples []*unstructured.Unstructured) (base *v1alpha1.ClusterServiceVersion, install, examples []*unstructured.Unstructured, err error) {
	isSample := map[Key]bool{}
	for _, s := range samples {
		isSample[KeyOf(s)] = true
	}
	for _, o := range manifests {
		switch {
		case o.GetKind() == "ClusterServiceVersion":
			if base != nil {
				return nil, nil, nil, fmt.Errorf("config/manifests renders more than one ClusterServiceVersion")
			}
			base = &v1alpha1.ClusterServiceVersion{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, base); err != nil {
				return nil, nil, nil, fmt.Errorf("CSV base: %w", err)
			}
		case isSample[KeyOf(o)]:
			examples = append(examples, o)
		default:
			install = append(install, o.DeepCopy())
		}
	}
	if base == nil {
		return nil, nil, nil, fmt.Errorf("config/manifests renders no ClusterServiceVersion base")
	}
	return base, install, examples, nil
}

// collectBeside adds to the bundle what travels beside the CSV: every
// install object the CSV does not express, except the Deployments and the
// operator's own ServiceAccounts (OLM creates both from the install
// strategy) and what a bundle cannot carry (excludedKinds; the Namespace
// becomes the CSV's suggested-namespace template).
func collectBeside(b *Bundle, csv *v1alpha1.ClusterServiceVersion, install []*unstructured.Unstructured, deploymentSAs map[string]bool, consumed keySet) error {
	for _, o := range install {
		k := KeyOf(o)
		switch {
		case consumed[k] || o.GetKind() == "Deployment":
			continue
		case o.GetKind() == "ServiceAccount" && deploymentSAs[o.GetName()]:
			continue
		case o.GetKind() == "Namespace":
			ns := o.DeepCopy()
			relabelManagedBy(ns, "olm")
			tmpl, err := json.Marshal(ns.Object)
			if err != nil {
				return err
			}
			csv.Annotations[annotationSuggestedNSTemplate] = string(tmpl)
			b.Excluded = append(b.Excluded, k)
		case excludedKinds[o.GetKind()]:
			b.Excluded = append(b.Excluded, k)
		case !SupportedBundleKinds[o.GetKind()]:
			return fmt.Errorf("%s cannot travel in a registry+v1 bundle; add it to the CSV or to the excluded kinds", k)
		default:
			c := o.DeepCopy()
			c.SetNamespace("") // OLM installs into the OperatorGroup's namespace
			relabelManagedBy(c, "olm")
			b.Others = append(b.Others, c)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
