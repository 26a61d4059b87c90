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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
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
	Package        string // package name, e.g. "coxswain"
	Version        string // semver without "v", e.g. "0.1.0"
	Image          string // controller image
	Channels       []string
	DefaultChannel string
	// Icon is an SVG image (config/manifests/bases/icon.svg).
	Icon []byte
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

// BuildBundle builds the bundle from `kustomize build config/manifests`
// (manifests: the CSV base, config/default and config/samples) and
// `kustomize build config/samples` (samples), which tells the samples apart
// from the install objects.
func BuildBundle(manifests, samples []*unstructured.Unstructured, opts BundleOptions) (*Bundle, error) {
	v, err := semver.Parse(opts.Version)
	if err != nil {
		return nil, fmt.Errorf("bundle version %q: %w", opts.Version, err)
	}
	if opts.Package == "" || opts.Image == "" || len(opts.Channels) == 0 || opts.DefaultChannel == "" {
		return nil, fmt.Errorf("bundle options need a package, image, channels and default channel")
	}
	if !slices.Contains(opts.Channels, opts.DefaultChannel) {
		return nil, fmt.Errorf("default channel %q is not one of the channels %v", opts.DefaultChannel, opts.Channels)
	}
	isSample := map[Key]bool{}
	for _, s := range samples {
		isSample[KeyOf(s)] = true
	}

	var base *v1alpha1.ClusterServiceVersion
	var install, examples []*unstructured.Unstructured
	for _, o := range manifests {
		switch {
		case o.GetKind() == "ClusterServiceVersion":
			if base != nil {
				return nil, fmt.Errorf("config/manifests renders more than one ClusterServiceVersion")
			}
			base = &v1alpha1.ClusterServiceVersion{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, base); err != nil {
				return nil, fmt.Errorf("CSV base: %w", err)
			}
		case isSample[KeyOf(o)]:
			examples = append(examples, o)
		default:
			install = append(install, o.DeepCopy())
		}
	}
	if base == nil {
		return nil, fmt.Errorf("config/manifests renders no ClusterServiceVersion base")
	}

	b := &Bundle{Annotations: map[string]string{
		AnnotationMediaType:      MediaTypeRegistryV1,
		AnnotationManifests:      ManifestsDir,
		AnnotationMetadata:       MetadataDir,
		AnnotationPackage:        opts.Package,
		AnnotationChannels:       strings.Join(opts.Channels, ","),
		AnnotationDefaultChannel: opts.DefaultChannel,
	}}
	csv := base.DeepCopy()
	csv.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ClusterServiceVersion"}
	csv.Name = fmt.Sprintf("%s.v%s", opts.Package, v)
	csv.Namespace = ""
	csv.Spec.Version = version.OperatorVersion{Version: v}
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations[annotationContainerImage] = opts.Image
	csv.Spec.RelatedImages = []v1alpha1.RelatedImage{{Name: "coxswain", Image: opts.Image}}
	if len(opts.Icon) > 0 {
		csv.Spec.Icon = []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(opts.Icon), MediaType: "image/svg+xml"}}
	}

	// Sort the install objects into what the CSV expresses (the Deployment
	// and the RBAC bound to its ServiceAccount) and what travels beside it.
	deployments := FilterKind(install, "Deployment")
	if len(deployments) == 0 {
		return nil, fmt.Errorf("config/default renders no Deployment")
	}
	deploymentSAs := map[string]bool{}
	var specs []v1alpha1.StrategyDeploymentSpec
	for _, d := range deployments {
		var dep appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep); err != nil {
			return nil, fmt.Errorf("Deployment %s: %w", d.GetName(), err)
		}
		sa := dep.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			return nil, fmt.Errorf("Deployment %s names no serviceAccountName", d.GetName())
		}
		deploymentSAs[sa] = true
		if d.GetName() == ControllerDeployment {
			if err := setControllerImage(&dep, opts.Image); err != nil {
				return nil, err
			}
		}
		lbls := dep.Labels
		delete(lbls, labelManagedBy)
		specs = append(specs, v1alpha1.StrategyDeploymentSpec{Name: dep.Name, Spec: dep.Spec, Label: lbls})
	}

	clusterRoles := map[string][]rbacv1.PolicyRule{}
	for _, o := range FilterKind(install, "ClusterRole") {
		var cr rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cr); err != nil {
			return nil, fmt.Errorf("ClusterRole %s: %w", o.GetName(), err)
		}
		if cr.AggregationRule != nil {
			return nil, fmt.Errorf("ClusterRole %s aggregates; a CSV cannot express it", cr.Name)
		}
		clusterRoles[cr.Name] = cr.Rules
	}
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range FilterKind(install, "Role") {
		var r rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
			return nil, fmt.Errorf("Role %s: %w", o.GetName(), err)
		}
		roles[r.Name] = r.Rules
	}

	consumed := map[Key]bool{}
	perms := map[string][]rbacv1.PolicyRule{}
	clusterPerms := map[string][]rbacv1.PolicyRule{}
	for _, o := range install {
		kind := o.GetKind()
		if kind != "ClusterRoleBinding" && kind != "RoleBinding" {
			continue
		}
		var subjects []rbacv1.Subject
		var ref rbacv1.RoleRef
		if kind == "ClusterRoleBinding" {
			var crb rbacv1.ClusterRoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crb); err != nil {
				return nil, err
			}
			subjects, ref = crb.Subjects, crb.RoleRef
		} else {
			var rb rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &rb); err != nil {
				return nil, err
			}
			subjects, ref = rb.Subjects, rb.RoleRef
		}
		if len(subjects) != 1 || subjects[0].Kind != rbacv1.ServiceAccountKind || !deploymentSAs[subjects[0].Name] {
			continue // not the operator's own identity: travels as is
		}
		sa := subjects[0].Name
		var rules []rbacv1.PolicyRule
		switch {
		case ref.Kind == "ClusterRole" && kind == "ClusterRoleBinding":
			r, ok := clusterRoles[ref.Name]
			if !ok {
				return nil, fmt.Errorf("%s %s binds the missing ClusterRole %s", kind, o.GetName(), ref.Name)
			}
			rules = r
			clusterPerms[sa] = append(clusterPerms[sa], rules...)
			consumed[Key{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ref.Name}] = true
		case ref.Kind == "Role":
			r, ok := roles[ref.Name]
			if !ok {
				return nil, fmt.Errorf("%s %s binds the missing Role %s", kind, o.GetName(), ref.Name)
			}
			perms[sa] = append(perms[sa], r...)
			consumed[Key{Group: "rbac.authorization.k8s.io", Kind: "Role", Namespace: o.GetNamespace(), Name: ref.Name}] = true
		default:
			r, ok := clusterRoles[ref.Name]
			if !ok {
				return nil, fmt.Errorf("%s %s binds the missing ClusterRole %s", kind, o.GetName(), ref.Name)
			}
			perms[sa] = append(perms[sa], r...)
		}
		consumed[KeyOf(o)] = true
	}
	strategy := v1alpha1.StrategyDetailsDeployment{DeploymentSpecs: specs}
	for _, sa := range sortedKeys(clusterPerms) {
		strategy.ClusterPermissions = append(strategy.ClusterPermissions, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: clusterPerms[sa]})
	}
	for _, sa := range sortedKeys(perms) {
		strategy.Permissions = append(strategy.Permissions, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: perms[sa]})
	}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{StrategyName: v1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}

	// Owned CRDs, described by the base where it has words for them.
	described := map[string]v1alpha1.CRDDescription{}
	for _, d := range base.Spec.CustomResourceDefinitions.Owned {
		described[d.Name] = d
	}
	ownedKinds := map[string]bool{} // group/kind
	var owned []v1alpha1.CRDDescription
	for _, o := range FilterKind(install, "CustomResourceDefinition") {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", o.GetName(), err)
		}
		desc, ok := described[crd.Name]
		delete(described, crd.Name)
		if !ok {
			desc = v1alpha1.CRDDescription{DisplayName: crd.Spec.Names.Kind, Description: schemaDescription(&crd)}
		}
		for _, ver := range crd.Spec.Versions {
			if !ver.Served {
				continue
			}
			d := desc
			d.Name, d.Version, d.Kind = crd.Name, ver.Name, crd.Spec.Names.Kind
			owned = append(owned, d)
		}
		ownedKinds[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = true
		c := o.DeepCopy()
		relabelManagedBy(c, "olm")
		b.CRDs = append(b.CRDs, c)
		consumed[KeyOf(o)] = true
	}
	if len(described) > 0 {
		return nil, fmt.Errorf("the CSV base describes CRDs config/crd does not render: %v", sortedKeys(described))
	}
	sort.Slice(owned, func(i, j int) bool {
		if owned[i].Name != owned[j].Name {
			return owned[i].Name < owned[j].Name
		}
		return owned[i].Version < owned[j].Version
	})
	csv.Spec.CustomResourceDefinitions.Owned = owned

	// alm-examples: the samples of owned kinds, without namespace.
	var alm []map[string]any
	for _, s := range examples {
		gvk := s.GroupVersionKind()
		if !ownedKinds[gvk.Group+"/"+gvk.Kind] {
			continue
		}
		c := s.DeepCopy()
		c.SetNamespace("")
		alm = append(alm, c.Object)
	}
	sort.Slice(alm, func(i, j int) bool {
		a, b := &unstructured.Unstructured{Object: alm[i]}, &unstructured.Unstructured{Object: alm[j]}
		return KeyOf(a).String() < KeyOf(b).String()
	})
	almJSON, err := json.MarshalIndent(alm, "", "  ")
	if err != nil {
		return nil, err
	}
	csv.Annotations[annotationALMExamples] = string(almJSON)

	// What travels beside the CSV. The operator's own ServiceAccounts are
	// created by OLM from the install strategy.
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
				return nil, err
			}
			csv.Annotations[annotationSuggestedNSTemplate] = string(tmpl)
			b.Excluded = append(b.Excluded, k)
		case excludedKinds[o.GetKind()]:
			b.Excluded = append(b.Excluded, k)
		case !SupportedBundleKinds[o.GetKind()]:
			return nil, fmt.Errorf("%s cannot travel in a registry+v1 bundle; add it to the CSV or to the excluded kinds", k)
		default:
			c := o.DeepCopy()
			c.SetNamespace("") // OLM installs into the OperatorGroup's namespace
			relabelManagedBy(c, "olm")
			b.Others = append(b.Others, c)
		}
	}
	SortObjects(b.CRDs)
	SortObjects(b.Others)
	b.CSV = csv
	return b, nil
}

// setControllerImage sets the controller container's image and, so that the
// proxies it provisions run the same image, its ProxyImageEnv (which
// config/default renders; its absence is an error).
func setControllerImage(dep *appsv1.Deployment, image string) error {
	for i := range dep.Spec.Template.Spec.Containers {
		c := &dep.Spec.Template.Spec.Containers[i]
		if c.Name != ControllerContainer {
			continue
		}
		c.Image = image
		for j := range c.Env {
			if c.Env[j].Name == ProxyImageEnv {
				c.Env[j].Value = image
				return nil
			}
		}
		return fmt.Errorf("Deployment %s: container %s sets no %s; config/default must render it", dep.Name, ControllerContainer, ProxyImageEnv)
	}
	return fmt.Errorf("Deployment %s has no container %s", dep.Name, ControllerContainer)
}

func schemaDescription(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			d := v.Schema.OpenAPIV3Schema.Description
			if i := strings.Index(d, "\n\n"); i > 0 {
				d = d[:i]
			}
			return strings.Join(strings.Fields(d), " ")
		}
	}
	return crd.Spec.Names.Kind
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CSVObject renders the CSV in its generic form, without status or nulls.
func CSVObject(csv *v1alpha1.ClusterServiceVersion) (*unstructured.Unstructured, error) {
	m, err := toMap(csv)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok {
		// Zero-valued structs of the CSV type that say nothing.
		if asd, ok := spec["apiservicedefinitions"].(map[string]any); ok && len(asd) == 0 {
			delete(spec, "apiservicedefinitions")
		}
		if p, ok := spec["provider"].(map[string]any); ok && len(p) == 0 {
			delete(spec, "provider")
		}
		if c, ok := spec["cleanup"].(map[string]any); ok && c["enabled"] == false {
			delete(spec, "cleanup")
		}
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// manifestFileName follows operator-sdk's naming:
// <name>_<group>_<version>_<kind>.yaml, or <plural>.<group> for CRDs' own
// file names, and <package>.clusterserviceversion.yaml.
func manifestFileName(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	if gvk.Kind == "CustomResourceDefinition" {
		name := o.GetName()
		if i := strings.Index(name, "."); i > 0 {
			return name[i+1:] + "_" + name[:i] + ".yaml"
		}
		return name + ".yaml"
	}
	parts := []string{o.GetName()}
	if gvk.Group != "" {
		parts = append(parts, gvk.Group)
	}
	parts = append(parts, gvk.Version, strings.ToLower(gvk.Kind))
	return strings.Join(parts, "_") + ".yaml"
}

// Files renders the bundle directory: manifests/ and metadata/.
func (b *Bundle) Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	csv, err := CSVObject(b.CSV)
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(csv.Object)
	if err != nil {
		return nil, err
	}
	files[ManifestsDir+b.Annotations[AnnotationPackage]+".clusterserviceversion.yaml"] = data
	for _, o := range append(append([]*unstructured.Unstructured{}, b.CRDs...), b.Others...) {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		name := ManifestsDir + manifestFileName(o)
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("two bundle manifests would be written to %s", name)
		}
		files[name] = data
	}
	ann, err := yaml.Marshal(map[string]any{"annotations": b.Annotations})
	if err != nil {
		return nil, err
	}
	files[MetadataDir+"annotations.yaml"] = ann
	return files, nil
}

// Dockerfile renders bundle.Dockerfile for a bundle directory at bundleDir
// (relative to the build context): the annotations as LABELs, then the two
// directories.
func (b *Bundle) Dockerfile(bundleDir string) []byte {
	var s strings.Builder
	s.WriteString("# Generated by `make bundle` (go run ./hack/bundle). DO NOT EDIT.\n")
	s.WriteString("FROM scratch\n\n")
	for _, k := range sortedKeys(b.Annotations) {
		fmt.Fprintf(&s, "LABEL %s=%s\n", k, b.Annotations[k])
	}
	fmt.Fprintf(&s, "\nCOPY %s/%s /%s\n", bundleDir, strings.TrimSuffix(ManifestsDir, "/"), ManifestsDir)
	fmt.Fprintf(&s, "COPY %s/%s /%s\n", bundleDir, strings.TrimSuffix(MetadataDir, "/"), MetadataDir)
	return []byte(s.String())
}

// LoadBundle reads a bundle directory back: the CSV (strictly: unknown
// fields are errors), the CRDs, the other manifests and the annotations.
func LoadBundle(dir string) (*Bundle, error) {
	entries, err := os.ReadDir(filepath.Join(dir, ManifestsDir))
	if err != nil {
		return nil, err
	}
	b := &Bundle{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		path := filepath.Join(dir, ManifestsDir, e.Name())
		objs, err := DecodeFile(path)
		if err != nil {
			return nil, err
		}
		if len(objs) != 1 {
			return nil, fmt.Errorf("%s: want one object, got %d", path, len(objs))
		}
		o := objs[0]
		switch o.GetKind() {
		case "ClusterServiceVersion":
			if b.CSV != nil {
				return nil, fmt.Errorf("%s: a second ClusterServiceVersion", path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			csv := &v1alpha1.ClusterServiceVersion{}
			if err := yaml.UnmarshalStrict(data, csv); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			b.CSV = csv
		case "CustomResourceDefinition":
			b.CRDs = append(b.CRDs, o)
		default:
			b.Others = append(b.Others, o)
		}
	}
	if b.CSV == nil {
		return nil, fmt.Errorf("%s: no ClusterServiceVersion", filepath.Join(dir, ManifestsDir))
	}
	data, err := os.ReadFile(filepath.Join(dir, MetadataDir, "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &ann); err != nil {
		return nil, fmt.Errorf("annotations.yaml: %w", err)
	}
	b.Annotations = ann.Annotations
	SortObjects(b.CRDs)
	SortObjects(b.Others)
	return b, nil
}

// InstallObjects converts a bundle into the objects OLM creates for it in
// namespace: the CRDs, a ServiceAccount per install-strategy identity, a
// Role/RoleBinding and ClusterRole/ClusterRoleBinding per permission entry,
// the Deployments, and the other manifests (namespaced ones moved into
// namespace). Names of generated RBAC follow "<csv>-<sa>".
func (b *Bundle) InstallObjects(namespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	add := func(obj any) error {
		m, err := toMap(obj)
		if err != nil {
			return err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
		return nil
	}
	for _, c := range b.CRDs {
		out = append(out, c.DeepCopy())
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	sas := map[string]bool{}
	for _, d := range spec.DeploymentSpecs {
		sas[d.Spec.Template.Spec.ServiceAccountName] = true
	}
	for _, p := range append(append([]v1alpha1.StrategyDeploymentPermissions{}, spec.Permissions...), spec.ClusterPermissions...) {
		sas[p.ServiceAccountName] = true
	}
	for _, sa := range sortedKeys(sas) {
		if err := add(&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace},
		}); err != nil {
			return nil, err
		}
	}
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: namespace}}
	}
	for _, p := range spec.Permissions {
		name := b.CSV.Name + "-" + p.ServiceAccountName
		if err := add(&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Rules:      p.Rules,
		}); err != nil {
			return nil, err
		}
		if err := add(&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects:   subject(p.ServiceAccountName),
		}); err != nil {
			return nil, err
		}
	}
	for _, p := range spec.ClusterPermissions {
		name := b.CSV.Name + "-" + p.ServiceAccountName
		if err := add(&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      p.Rules,
		}); err != nil {
			return nil, err
		}
		if err := add(&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects:   subject(p.ServiceAccountName),
		}); err != nil {
			return nil, err
		}
	}
	for _, d := range spec.DeploymentSpecs {
		if err := add(&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: namespace, Labels: d.Label},
			Spec:       d.Spec,
		}); err != nil {
			return nil, err
		}
	}
	for _, o := range b.Others {
		c := o.DeepCopy()
		if c.GetNamespace() != "" || namespacedBundleKind(c.GetKind()) {
			c.SetNamespace(namespace)
		}
		// Bindings shipped as manifests name subjects in the install
		// namespace, which OLM only learns at install time.
		if subjects, ok, _ := unstructured.NestedSlice(c.Object, "subjects"); ok {
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok && m["kind"] == rbacv1.ServiceAccountKind {
					m["namespace"] = namespace
				}
			}
			_ = unstructured.SetNestedSlice(c.Object, subjects, "subjects")
		}
		out = append(out, c)
	}
	return out, nil
}

func namespacedBundleKind(kind string) bool {
	switch kind {
	case "ClusterRole", "ClusterRoleBinding", "PriorityClass", "ConsoleYAMLSample", "ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink", "CustomResourceDefinition":
		return false
	}
	return true
}
