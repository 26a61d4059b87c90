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
	"net/mail"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Level is the severity of a Finding.
type Level string

const (
	LevelError   Level = "error"
	LevelWarning Level = "warning"
)

// Finding is one problem ValidateBundle found.
type Finding struct {
	Level   Level
	Subject string // what the finding is about, e.g. "CSV spec.icon"
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s: %s", f.Level, f.Subject, f.Message) }

// Errors returns the findings of LevelError.
func Errors(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Level == LevelError {
			out = append(out, f)
		}
	}
	return out
}

// OperatorHub's closed lists.
var (
	validCapabilities = map[string]bool{
		"Basic Install": true, "Seamless Upgrades": true, "Full Lifecycle": true, "Deep Insights": true, "Auto Pilot": true,
	}
	validCategories = map[string]bool{
		"AI/Machine Learning": true, "Application Runtime": true, "Big Data": true, "Cloud Provider": true,
		"Developer Tools": true, "Database": true, "Integration & Delivery": true, "Logging & Tracing": true,
		"Monitoring": true, "Modernization & Migration": true, "Networking": true, "OpenShift Optional": true,
		"Security": true, "Storage": true, "Streaming & Messaging": true, "Drivers and plugins": true,
	}
	validMaturity   = map[string]bool{"planning": true, "pre-alpha": true, "alpha": true, "beta": true, "stable": true, "mature": true, "inactive": true, "deprecated": true}
	validIconTypes  = map[string]bool{"image/gif": true, "image/jpeg": true, "image/png": true, "image/svg+xml": true}
	validInstallMod = map[v1alpha1.InstallModeType]bool{
		v1alpha1.InstallModeTypeOwnNamespace: true, v1alpha1.InstallModeTypeSingleNamespace: true,
		v1alpha1.InstallModeTypeMultiNamespace: true, v1alpha1.InstallModeTypeAllNamespaces: true,
	}
	csvNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidateBundle runs the checks `operator-sdk bundle validate
// --select-optional suite=operatorframework` makes on a registry+v1 bundle
// (the CSV, CRD, bundle and OperatorHub validators), plus Coxswain's own:
// the controller's cluster permissions hold no wildcard and the proxy
// ServiceAccount is granted nothing. dockerfile, when not nil, must carry
// the annotations as LABELs.
func ValidateBundle(b *Bundle, dockerfile []byte) []Finding {
	var fs []Finding
	errf := func(subject, format string, args ...any) {
		fs = append(fs, Finding{Level: LevelError, Subject: subject, Message: fmt.Sprintf(format, args...)})
	}
	warnf := func(subject, format string, args ...any) {
		fs = append(fs, Finding{Level: LevelWarning, Subject: subject, Message: fmt.Sprintf(format, args...)})
	}

	// Bundle metadata.
	ann := b.Annotations
	if ann[AnnotationMediaType] != MediaTypeRegistryV1 {
		errf("annotations", "%s must be %s, got %q", AnnotationMediaType, MediaTypeRegistryV1, ann[AnnotationMediaType])
	}
	if ann[AnnotationManifests] != ManifestsDir || ann[AnnotationMetadata] != MetadataDir {
		errf("annotations", "manifests and metadata directories must be %s and %s", ManifestsDir, MetadataDir)
	}
	pkg := ann[AnnotationPackage]
	if pkg == "" || len(validation.IsDNS1123Label(pkg)) > 0 {
		errf("annotations", "package name %q must be a DNS-1123 label", pkg)
	}
	channels := strings.Split(ann[AnnotationChannels], ",")
	if ann[AnnotationChannels] == "" {
		errf("annotations", "no channels")
	}
	if def := ann[AnnotationDefaultChannel]; def == "" {
		warnf("annotations", "no default channel")
	} else if !contains(channels, def) {
		errf("annotations", "default channel %q is not one of the channels %v", def, channels)
	}
	if dockerfile != nil {
		for k, v := range ann {
			if !strings.Contains(string(dockerfile), fmt.Sprintf("LABEL %s=%s\n", k, v)) {
				errf("bundle.Dockerfile", "missing LABEL %s=%s", k, v)
			}
		}
	}

	csv := b.CSV
	if csv == nil {
		errf("bundle", "no ClusterServiceVersion")
		return fs
	}
	s := csv.Spec

	// CSV basics.
	if csv.APIVersion != v1alpha1.SchemeGroupVersion.String() || csv.Kind != "ClusterServiceVersion" {
		errf("CSV", "apiVersion/kind must be %s ClusterServiceVersion", v1alpha1.SchemeGroupVersion)
	}
	if !csvNameRE.MatchString(csv.Name) || len(csv.Name) > 253 {
		errf("CSV metadata.name", "%q is not a valid DNS-1123 subdomain", csv.Name)
	}
	if s.Version.String() == "0.0.0" {
		errf("CSV spec.version", "not set")
	} else if csv.Name != pkg+".v"+s.Version.String() {
		warnf("CSV metadata.name", "%q should be <package>.v<version> (%s.v%s)", csv.Name, pkg, s.Version)
	}
	if s.MinKubeVersion == "" {
		errf("CSV spec.minKubeVersion", "not set")
	} else if _, err := semver.ParseTolerant(s.MinKubeVersion); err != nil {
		errf("CSV spec.minKubeVersion", "%q is not a semantic version: %v", s.MinKubeVersion, err)
	}
	if s.Replaces != "" && !csvNameRE.MatchString(s.Replaces) {
		errf("CSV spec.replaces", "%q is not a valid CSV name", s.Replaces)
	}

	// Install modes.
	if len(s.InstallModes) == 0 {
		errf("CSV spec.installModes", "none declared")
	}
	anySupported := false
	seenModes := map[v1alpha1.InstallModeType]bool{}
	for _, m := range s.InstallModes {
		if !validInstallMod[m.Type] {
			errf("CSV spec.installModes", "unknown install mode %q", m.Type)
		}
		if seenModes[m.Type] {
			errf("CSV spec.installModes", "install mode %q declared twice", m.Type)
		}
		seenModes[m.Type] = true
		anySupported = anySupported || m.Supported
	}
	if len(s.InstallModes) > 0 && !anySupported {
		errf("CSV spec.installModes", "no install mode is supported")
	}

	// Install strategy.
	strat := s.InstallStrategy
	if strat.StrategyName != v1alpha1.InstallStrategyNameDeployment {
		errf("CSV spec.install.strategy", "must be %q, got %q", v1alpha1.InstallStrategyNameDeployment, strat.StrategyName)
	}
	if len(strat.StrategySpec.DeploymentSpecs) == 0 {
		errf("CSV spec.install.spec.deployments", "none")
	}
	deploymentSAs := map[string]bool{}
	for _, d := range strat.StrategySpec.DeploymentSpecs {
		if len(validation.IsDNS1123Subdomain(d.Name)) > 0 {
			errf("CSV spec.install.spec.deployments", "name %q is not a DNS-1123 subdomain", d.Name)
		}
		pod := d.Spec.Template.Spec
		deploymentSAs[pod.ServiceAccountName] = true
		if len(pod.Containers) == 0 {
			errf("CSV deployment "+d.Name, "no containers")
		}
		for _, c := range pod.Containers {
			if c.Image == "" {
				errf("CSV deployment "+d.Name, "container %s has no image", c.Name)
			}
		}
		if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels)+len(d.Spec.Selector.MatchExpressions) == 0 {
			errf("CSV deployment "+d.Name, "no selector")
		}
	}
	checkPerms := func(field string, perms []v1alpha1.StrategyDeploymentPermissions, cluster bool) {
		for _, p := range perms {
			subj := fmt.Sprintf("CSV %s[%s]", field, p.ServiceAccountName)
			if p.ServiceAccountName == "" {
				errf("CSV "+field, "a permission names no serviceAccountName")
			}
			if !deploymentSAs[p.ServiceAccountName] {
				warnf(subj, "no deployment runs as this ServiceAccount")
			}
			if p.ServiceAccountName == ProxyServiceAccount {
				errf(subj, "the shared proxy ServiceAccount must hold no Kubernetes API rights")
			}
			for i, r := range p.Rules {
				if len(r.Verbs) == 0 {
					errf(subj, "rule %d has no verbs", i)
				}
				if len(r.NonResourceURLs) > 0 && !cluster {
					errf(subj, "rule %d: nonResourceURLs need cluster permissions", i)
				}
				if v := Wildcards(r); len(v) > 0 {
					errf(subj, "rule %d grants a wildcard (%s); the controller is least-privilege", i, strings.Join(v, ", "))
				}
			}
		}
	}
	checkPerms("spec.install.spec.permissions", strat.StrategySpec.Permissions, false)
	checkPerms("spec.install.spec.clusterPermissions", strat.StrategySpec.ClusterPermissions, true)

	// CRDs: each parses, each is owned, each owned entry is in the bundle.
	inBundle := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, o := range b.CRDs {
		if o.GetAPIVersion() != apiextensionsv1.SchemeGroupVersion.String() {
			errf("CRD "+o.GetName(), "apiVersion %s is removed; use %s", o.GetAPIVersion(), apiextensionsv1.SchemeGroupVersion)
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, crd, true); err != nil {
			errf("CRD "+o.GetName(), "does not parse: %v", err)
			continue
		}
		if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
			errf("CRD "+crd.Name, "name must be %s", want)
		}
		storage := 0
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage++
			}
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				errf("CRD "+crd.Name, "version %s has no schema", v.Name)
			}
		}
		if storage != 1 {
			errf("CRD "+crd.Name, "exactly one version must be the storage version, got %d", storage)
		}
		inBundle[crd.Name] = crd
	}
	ownedNames := map[string]bool{}
	ownedKinds := map[string]bool{}
	for _, d := range s.CustomResourceDefinitions.Owned {
		subj := "CSV owned CRD " + d.Name
		ownedNames[d.Name] = true
		if d.DisplayName == "" {
			warnf(subj, "no displayName")
		}
		if d.Description == "" {
			warnf(subj, "no description")
		}
		crd, ok := inBundle[d.Name]
		if !ok {
			errf(subj, "not in the bundle's manifests")
			continue
		}
		if d.Kind != crd.Spec.Names.Kind {
			errf(subj, "kind %q, the CRD says %q", d.Kind, crd.Spec.Names.Kind)
		}
		served := false
		for _, v := range crd.Spec.Versions {
			served = served || (v.Name == d.Version && v.Served)
		}
		if !served {
			errf(subj, "version %q is not served by the CRD", d.Version)
		}
		ownedKinds[crd.Spec.Group+"/"+d.Version+"/"+d.Kind] = true
	}
	for name := range inBundle {
		if !ownedNames[name] {
			errf("CRD "+name, "in the bundle but not owned by the CSV")
		}
	}
	if len(s.CustomResourceDefinitions.Required) > 0 {
		for _, d := range s.CustomResourceDefinitions.Required {
			if ownedNames[d.Name] {
				errf("CSV required CRD "+d.Name, "both owned and required")
			}
		}
	}

	// alm-examples: a JSON array of objects of owned kinds; every owned
	// kind should have one.
	examples := map[string]bool{}
	if raw, ok := csv.Annotations[annotationALMExamples]; !ok {
		warnf("CSV alm-examples", "none")
	} else {
		var alm []map[string]any
		if err := json.Unmarshal([]byte(raw), &alm); err != nil {
			errf("CSV alm-examples", "not a JSON array of objects: %v", err)
		}
		for i, e := range alm {
			u := &unstructured.Unstructured{Object: e}
			gvk := u.GroupVersionKind()
			key := gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
			if !ownedKinds[key] {
				errf("CSV alm-examples", "example %d (%s) is not of an owned CRD", i, key)
			}
			examples[key] = true
		}
	}
	for k := range ownedKinds {
		if !examples[k] {
			warnf("CSV alm-examples", "no example of owned %s", k)
		}
	}

	// Other manifests.
	for _, o := range b.Others {
		if !SupportedBundleKinds[o.GetKind()] {
			errf(KeyOf(o).String(), "kind %s is not supported in a registry+v1 bundle", o.GetKind())
		}
		if o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, sub := range subjects {
				if m, ok := sub.(map[string]any); ok && m["kind"] == rbacv1.ServiceAccountKind && m["name"] == ProxyServiceAccount {
					errf(KeyOf(o).String(), "binds the shared proxy ServiceAccount, which must hold no rights")
				}
			}
		}
	}

	// OperatorHub: what the catalogue page shows.
	if s.DisplayName == "" {
		errf("CSV spec.displayName", "not set")
	}
	if len(strings.TrimSpace(s.Description)) < 50 {
		errf("CSV spec.description", "missing or shorter than 50 characters")
	}
	if csv.Annotations["description"] == "" {
		warnf("CSV metadata.annotations.description", "no short description")
	}
	if s.Provider.Name == "" {
		errf("CSV spec.provider.name", "not set")
	}
	if len(s.Maintainers) == 0 {
		errf("CSV spec.maintainers", "none")
	}
	for _, m := range s.Maintainers {
		if m.Name == "" {
			errf("CSV spec.maintainers", "a maintainer has no name")
		}
		if _, err := mail.ParseAddress(m.Email); err != nil {
			errf("CSV spec.maintainers", "email %q is invalid: %v", m.Email, err)
		}
	}
	if len(s.Links) == 0 {
		errf("CSV spec.links", "none")
	}
	for _, l := range s.Links {
		if l.Name == "" {
			errf("CSV spec.links", "a link has no name")
		}
		if u, err := url.ParseRequestURI(l.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errf("CSV spec.links", "%q is not an http(s) URL", l.URL)
		}
	}
	if s.Provider.URL != "" {
		if u, err := url.ParseRequestURI(s.Provider.URL); err != nil || u.Host == "" {
			errf("CSV spec.provider.url", "%q is not a URL", s.Provider.URL)
		}
	}
	if len(s.Icon) != 1 {
		errf("CSV spec.icon", "want exactly one icon, got %d", len(s.Icon))
	}
	for _, ic := range s.Icon {
		if !validIconTypes[ic.MediaType] {
			errf("CSV spec.icon", "media type %q is not one of gif, jpeg, png, svg+xml", ic.MediaType)
		}
		if data, err := base64.StdEncoding.DecodeString(ic.Data); err != nil || len(data) == 0 {
			errf("CSV spec.icon", "base64data does not decode")
		}
	}
	if len(s.Keywords) == 0 {
		errf("CSV spec.keywords", "none")
	}
	if !validMaturity[s.Maturity] {
		errf("CSV spec.maturity", "%q is not a known maturity", s.Maturity)
	}
	if c := csv.Annotations["capabilities"]; !validCapabilities[c] {
		errf("CSV metadata.annotations.capabilities", "%q is not a capability level", c)
	}
	if cats := csv.Annotations["categories"]; cats == "" {
		warnf("CSV metadata.annotations.categories", "none")
	} else {
		for _, c := range strings.Split(cats, ",") {
			if !validCategories[strings.TrimSpace(c)] {
				errf("CSV metadata.annotations.categories", "%q is not an OperatorHub category", strings.TrimSpace(c))
			}
		}
	}
	if csv.Annotations[annotationContainerImage] == "" {
		errf("CSV metadata.annotations.containerImage", "not set")
	}
	if tmpl, ok := csv.Annotations[annotationSuggestedNSTemplate]; ok {
		var ns map[string]any
		if err := json.Unmarshal([]byte(tmpl), &ns); err != nil || ns["kind"] != "Namespace" {
			errf("CSV "+annotationSuggestedNSTemplate, "not a JSON Namespace")
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Level < fs[j].Level })
	return fs
}

// Wildcards lists the "*" entries of a policy rule.
func Wildcards(r rbacv1.PolicyRule) []string {
	var out []string
	for field, vals := range map[string][]string{"verbs": r.Verbs, "resources": r.Resources, "apiGroups": r.APIGroups, "nonResourceURLs": r.NonResourceURLs} {
		for _, v := range vals {
			if v == "*" || strings.HasSuffix(v, "/*") {
				out = append(out, field+"="+v)
			}
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
