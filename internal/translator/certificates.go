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
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// refProblem is why a listener's references do not resolve: the reason and
// message of its ResolvedRefs=False condition.
type refProblem struct {
	reason, message string
}

// listenerCerts resolves the certificateRefs of an HTTPS listener or a
// terminating TLS listener into li.certs. It returns nil when all are
// usable, else the first problem.
func (t *translator) listenerCerts(owner listenerOwner, l *gwv1.Listener, li *listenerInfo) *refProblem {
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		return &refProblem{status.ReasonInvalidCertificateRef, string(l.Protocol) + " listener needs tls.certificateRefs"}
	}
	if l.Protocol == gwv1.HTTPSProtocolType && l.TLS.Mode != nil && *l.TLS.Mode != gwv1.TLSModeTerminate {
		return &refProblem{status.ReasonInvalidCertificateRef, fmt.Sprintf("tls.mode %q is not supported on HTTPS; use Terminate", *l.TLS.Mode)}
	}
	for _, ref := range l.TLS.CertificateRefs {
		g, k := "", kindSecret
		if ref.Group != nil {
			g = string(*ref.Group)
		}
		if ref.Kind != nil {
			k = string(*ref.Kind)
		}
		ns := owner.namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		desc := fmt.Sprintf("certificateRef %s/%s", ns, ref.Name)
		if g != "" || k != kindSecret {
			return &refProblem{status.ReasonInvalidCertificateRef, fmt.Sprintf("%s: kind %s/%s is not a core Secret", desc, g, k)}
		}
		if ns != owner.namespace && !t.granted(gatewayGroup, owner.kind, owner.namespace, "", kindSecret, ns, string(ref.Name)) {
			return &refProblem{status.ReasonRefNotPermitted, desc + ": no ReferenceGrant in namespace " + ns + " allows it"}
		}
		id, err := t.certificate(ns, string(ref.Name))
		if err != nil {
			return &refProblem{status.ReasonInvalidCertificateRef, desc + ": " + err.Error()}
		}
		li.certs = append(li.certs, id)
	}
	return nil
}

// unusableSecret says why a TLS Secret cannot serve. Its text goes
// verbatim into condition and Event messages (hence "Secret", the kind,
// capitalised).
type unusableSecret string

func (u unusableSecret) Error() string { return string(u) }

// certificate validates a kubernetes.io/tls Secret once and returns its
// snapshot certificate name (id), or an unusableSecret error.
func (t *translator) certificate(ns, name string) (id string, err error) {
	id = ns + "/" + name
	if _, ok := t.certs[id]; ok {
		return id, nil
	}
	if err, ok := t.badCerts[id]; ok {
		return "", err
	}
	s := t.ix.secrets[nn{Namespace: ns, Name: name}]
	switch {
	case s == nil:
		err = unusableSecret("Secret not found")
	case s.Type != corev1.SecretTypeTLS:
		err = unusableSecret(fmt.Sprintf("Secret type is %q, want %q", s.Type, corev1.SecretTypeTLS))
	default:
		crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		if _, kerr := tls.X509KeyPair(crt, key); kerr != nil {
			err = unusableSecret("invalid certificate or key: " + kerr.Error())
		} else {
			t.certs[id] = &snapshot.Certificate{Name: id, CertPEM: string(crt), KeyPEM: string(key)}
			return id, nil
		}
	}
	t.badCerts[id] = err
	return "", err
}
