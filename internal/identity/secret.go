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

package identity

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Mode says where the CA comes from.
type Mode string

const (
	// ModeAuto means the first replica to find the Secret absent generates a
	// CA and creates it; every replica loads whatever the Secret holds.
	ModeAuto Mode = "auto"
	// ModeExternal means the Secret is supplied (cert-manager or by hand);
	// while it is absent, discovery is not served.
	ModeExternal Mode = "external"
)

// Secret keys of the CA Secret.
const (
	SecretCertKey   = corev1.TLSCertKey       // tls.crt
	SecretKeyKey    = corev1.TLSPrivateKeyKey // tls.key
	SecretBundleKey = "ca.crt"                // optional extra roots
)

// SecretSource keeps a CA loaded from its Secret and reloads it when the
// Secret changes (hot reload for an externally supplied CA).
type SecretSource struct {
	// Client creates the Secret (ModeAuto) and the trust ConfigMap.
	Client client.Client
	// Reader reads the Secret; default Client. Pass the manager's API
	// reader to avoid caching every Secret (one Get per Interval).
	Reader    client.Reader
	Namespace string
	Name      string
	Mode      Mode
	CA        *CA
	// TrustConfigMap, when set, is a ConfigMap in Namespace that the
	// source keeps equal to the CA's bundle (key names.TrustBundleKey), for
	// proxies to mount as their trust bundle.
	TrustConfigMap string
	// Interval between reloads (default 10s).
	Interval time.Duration
	Log      logr.Logger
}

// Load reads the Secret into the CA, creating it first in ModeAuto when it
// is absent (if another replica creates it first, that one wins).
func (s *SecretSource) Load(ctx context.Context) error {
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	reader := s.Reader
	if reader == nil {
		reader = s.Client
	}
	sec := &corev1.Secret{}
	err := reader.Get(ctx, key, sec)
	if apierrors.IsNotFound(err) {
		if s.Mode != ModeAuto {
			return fmt.Errorf("CA Secret %s is absent (mode %s): discovery is not served until it exists", key, s.Mode)
		}
		created, cerr := s.create(ctx)
		switch {
		case cerr != nil:
			return cerr
		case created != nil:
			// Use what was written: a cache-backed reader may not have
			// seen it yet (it would answer NotFound until the next
			// reload, and the trust ConfigMap would wait as long).
			sec, err = created, nil
		default:
			err = reader.Get(ctx, key, sec) // another replica's
		}
	}
	if err != nil {
		return fmt.Errorf("reading CA Secret %s: %w", key, err)
	}
	changed, err := s.CA.SetAuthority(sec.Data[SecretCertKey], sec.Data[SecretKeyKey], sec.Data[SecretBundleKey])
	if err != nil {
		return fmt.Errorf("CA Secret %s: %w", key, err)
	}
	if changed {
		s.Log.Info("loaded the discovery CA", "secret", key.String(), "generation", s.CA.Generation())
	}
	if s.TrustConfigMap != "" {
		return s.publishTrust(ctx, reader)
	}
	return nil
}

// publishTrust makes the trust ConfigMap hold the current bundle.
func (s *SecretSource) publishTrust(ctx context.Context, reader client.Reader) error {
	bundle := string(s.CA.BundlePEM())
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.TrustConfigMap}
	cm := &corev1.ConfigMap{}
	err := reader.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.TrustConfigMap,
				Labels: map[string]string{names.LabelName: names.ValueName, names.LabelComponent: names.ComponentDiscoveryTrust}},
			Data: map[string]string{names.TrustBundleKey: bundle},
		}
		if err := s.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating trust ConfigMap %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading trust ConfigMap %s: %w", key, err)
	}
	if cm.Data[names.TrustBundleKey] == bundle {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[names.TrustBundleKey] = bundle
	if err := s.Client.Update(ctx, cm); err != nil {
		return fmt.Errorf("updating trust ConfigMap %s: %w", key, err)
	}
	return nil
}

// create writes a new CA Secret and returns it; nil without an error when
// another replica created it first.
func (s *SecretSource) create(ctx context.Context) (*corev1.Secret, error) {
	certPEM, keyPEM, err := GenerateAuthority(s.CA.TrustDomain(), time.Now())
	if err != nil {
		return nil, err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace,
			Name:      s.Name,
			Labels:    map[string]string{names.LabelName: names.ValueName, names.LabelComponent: names.ComponentDiscoveryCA},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{SecretCertKey: certPEM, SecretKeyKey: keyPEM},
	}
	err = s.Client.Create(ctx, sec)
	switch {
	case err == nil:
		s.Log.Info("created the discovery CA", "secret", s.Namespace+"/"+s.Name)
		return sec, nil
	case apierrors.IsAlreadyExists(err):
		return nil, nil // another replica was first; load theirs
	default:
		return nil, fmt.Errorf("creating CA Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
}

// Start loads the CA, then reloads it every Interval until ctx ends. Load
// errors are logged and retried; the CA keeps its last good authority.
func (s *SecretSource) Start(ctx context.Context) error {
	interval := s.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		if err := s.Load(ctx); err != nil && ctx.Err() == nil {
			if err.Error() != lastErr {
				s.Log.Error(err, "loading the discovery CA")
			}
			lastErr = err.Error()
		} else {
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection is false: every replica issues SVIDs.
func (s *SecretSource) NeedLeaderElection() bool { return false }
