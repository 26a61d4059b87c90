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

package translator

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// htpasswdKeys are the Secret keys an htpasswd file is read from, in order.
var htpasswdKeys = []string{"auth", ".htpasswd"}

// compileBasicAuths compiles every BasicAuth with the htpasswd entries of
// its Secret. It fails closed: an unusable Secret makes its routes answer
// 500.
func compileBasicAuths(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindBasicAuth, t.res.BasicAuths,
		func(p *gatewayv1alpha1.BasicAuth) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.BasicAuth, p *policy) {
			p.failClosed = true
			s := &o.Spec
			ref := s.SecretRef
			ns := o.Namespace
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != kindSecret) {
				p.invalidf("spec.secretRef: only core Secrets are supported")
				return
			}
			if ns != o.Namespace && !t.granted(gatewayv1alpha1.GroupVersion.Group, gatewayv1alpha1.KindBasicAuth, o.Namespace, "", kindSecret, ns, string(ref.Name)) {
				p.invalidf("spec.secretRef: no ReferenceGrant in namespace %s allows BasicAuth %s/%s to use Secret %s", ns, o.Namespace, o.Name, ref.Name)
				return
			}
			users, err := t.htpasswd(ns, string(ref.Name))
			if err != nil {
				p.invalidf("spec.secretRef: %v", err)
				return
			}
			if s.ForwardUsernameHeader != "" && !snapshot.ValidToken(s.ForwardUsernameHeader) {
				p.invalidf("spec.forwardUsernameHeader: %q is not a header name", s.ForwardUsernameHeader)
				return
			}
			ba := snapshot.BasicAuth{Realm: s.Realm, Users: users, ForwardUsernameHeader: s.ForwardUsernameHeader, StripAuthorization: s.StripAuthorization}
			p.route = func(r *snapshot.Route) { v := ba; r.BasicAuth = &v }
		})
}

// htpasswd reads the htpasswd entries of a Secret: "user:hash" lines,
// bcrypt or {SHA}; blank lines and # comments are skipped.
func (t *translator) htpasswd(ns, name string) ([]snapshot.BasicAuthUser, error) {
	sec := t.ix.secrets[nn{Namespace: ns, Name: name}]
	if sec == nil {
		return nil, fmt.Errorf("secret %s/%s not found", ns, name)
	}
	var data []byte
	for _, k := range htpasswdKeys {
		if v, ok := sec.Data[k]; ok {
			data = v
			break
		}
	}
	if data == nil {
		return nil, fmt.Errorf("secret %s/%s has no key %s", ns, name, strings.Join(htpasswdKeys, " or "))
	}
	seen := map[string]bool{}
	var users []snapshot.BasicAuthUser
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" || hash == "" {
			return nil, fmt.Errorf("secret %s/%s line %d is not user:hash", ns, name, i+1)
		}
		if !supportedPasswordHash(hash) {
			return nil, fmt.Errorf("secret %s/%s: user %q has an unsupported hash (use bcrypt or {SHA})", ns, name, user)
		}
		if seen[user] {
			return nil, fmt.Errorf("secret %s/%s: user %q is listed twice", ns, name, user)
		}
		seen[user] = true
		users = append(users, snapshot.BasicAuthUser{Name: user, Hash: hash})
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("secret %s/%s lists no users", ns, name)
	}
	sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	return users, nil
}

func supportedPasswordHash(h string) bool {
	for _, p := range []string{"$2y$", "$2a$", "$2b$", "{SHA}"} {
		if strings.HasPrefix(h, p) {
			return true
		}
	}
	return false
}
