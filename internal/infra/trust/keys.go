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

package trust

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

// Errors of Verify. They wrap into the error Verify returns, so callers can
// classify a refusal with errors.Is.
var (
	ErrUnsigned     = errors.New("trust signature missing")
	ErrUnknownKey   = errors.New("trust signature made by an unknown key")
	ErrBadSignature = errors.New("trust signature does not verify")
	ErrStale        = errors.New("trust signature is older than the accepted one")
)

// Signer makes trust signatures with one key.
type Signer struct {
	KeyID string
	Key   crypto.Signer
}

// Sign signs f at time at (truncated to seconds, the precision the API keeps).
func (s Signer) Sign(f Fields, at time.Time) (*infrav1alpha1.TrustSignature, error) {
	if s.KeyID == "" || s.Key == nil {
		return nil, errors.New("trust signer needs a key ID and a key")
	}
	at = at.UTC().Truncate(time.Second)
	msg := Canonical(f, s.KeyID, at)
	var sig []byte
	var err error
	switch s.Key.Public().(type) {
	case ed25519.PublicKey:
		sig, err = s.Key.Sign(rand.Reader, msg, crypto.Hash(0))
	case *ecdsa.PublicKey:
		d := sha256.Sum256(msg)
		sig, err = s.Key.Sign(rand.Reader, d[:], crypto.SHA256)
	default:
		return nil, fmt.Errorf("trust signer key %q: unsupported key type %T (want Ed25519 or ECDSA P-256)", s.KeyID, s.Key.Public())
	}
	if err != nil {
		return nil, fmt.Errorf("signing with key %q: %w", s.KeyID, err)
	}
	return &infrav1alpha1.TrustSignature{KeyID: s.KeyID, SignedAt: metav1.NewTime(at), Signature: sig}, nil
}

// KeySet maps key IDs to verification keys.
type KeySet map[string]crypto.PublicKey

// Verify checks that sig is a valid signature of f by a key in ks.
func (ks KeySet) Verify(f Fields, sig *infrav1alpha1.TrustSignature) error {
	if sig == nil || sig.KeyID == "" || len(sig.Signature) == 0 {
		return ErrUnsigned
	}
	pub, ok := ks[sig.KeyID]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownKey, sig.KeyID)
	}
	msg := Canonical(f, sig.KeyID, sig.SignedAt.Time)
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if !ed25519.Verify(k, msg, sig.Signature) {
			return fmt.Errorf("%w (key %q)", ErrBadSignature, sig.KeyID)
		}
	case *ecdsa.PublicKey:
		d := sha256.Sum256(msg)
		if !ecdsa.VerifyASN1(k, d[:], sig.Signature) {
			return fmt.Errorf("%w (key %q)", ErrBadSignature, sig.KeyID)
		}
	default:
		return fmt.Errorf("%w: key %q has unsupported type %T", ErrBadSignature, sig.KeyID, pub)
	}
	return nil
}

// keyFile is the on-disk form of a KeySet: key ID → PEM "PUBLIC KEY" (PKIX).
type keyFile struct {
	Keys map[string]string `json:"keys"`
}

// ParseKeySet parses a key file:
//
//	keys:
//	  <keyID>: |
//	    -----BEGIN PUBLIC KEY-----
//	    ...
func ParseKeySet(data []byte) (KeySet, error) {
	var kf keyFile
	if err := yaml.UnmarshalStrict(data, &kf); err != nil {
		return nil, fmt.Errorf("parsing trust key file: %w", err)
	}
	if len(kf.Keys) == 0 {
		return nil, errors.New("trust key file holds no keys")
	}
	ks := KeySet{}
	for id, p := range kf.Keys {
		if strings.TrimSpace(id) == "" {
			return nil, errors.New("trust key file: empty key ID")
		}
		block, rest := pem.Decode([]byte(p))
		if block == nil || block.Type != "PUBLIC KEY" || len(strings.TrimSpace(string(rest))) != 0 {
			return nil, fmt.Errorf("trust key %q: want exactly one PEM PUBLIC KEY block", id)
		}
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("trust key %q: %w", id, err)
		}
		if err := checkKeyType(pub); err != nil {
			return nil, fmt.Errorf("trust key %q: %w", id, err)
		}
		ks[id] = pub
	}
	return ks, nil
}

// LoadKeySet reads a key file.
func LoadKeySet(path string) (KeySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading trust key file: %w", err)
	}
	return ParseKeySet(data)
}

// MarshalKeySet renders ks in the key file format, keys sorted by ID.
func MarshalKeySet(ks KeySet) ([]byte, error) {
	ids := make([]string, 0, len(ks))
	for id := range ks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	b.WriteString("keys:\n")
	for _, id := range ids {
		der, err := x509.MarshalPKIXPublicKey(ks[id])
		if err != nil {
			return nil, fmt.Errorf("trust key %q: %w", id, err)
		}
		fmt.Fprintf(&b, "  %s: |\n", id)
		for _, line := range strings.Split(strings.TrimRight(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	return []byte(b.String()), nil
}

// ParseSigner parses a PEM "PRIVATE KEY" (PKCS #8) Ed25519 or ECDSA P-256 key.
func ParseSigner(keyID string, data []byte) (Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return Signer{}, errors.New("signing key: want a PEM PRIVATE KEY (PKCS #8) block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return Signer{}, fmt.Errorf("signing key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return Signer{}, fmt.Errorf("signing key: unsupported type %T", k)
	}
	if err := checkKeyType(s.Public()); err != nil {
		return Signer{}, fmt.Errorf("signing key: %w", err)
	}
	if keyID == "" {
		return Signer{}, errors.New("signing key: key ID is empty")
	}
	return Signer{KeyID: keyID, Key: s}, nil
}

// LoadSigner reads a signing key file.
func LoadSigner(keyID, path string) (Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Signer{}, fmt.Errorf("reading signing key: %w", err)
	}
	return ParseSigner(keyID, data)
}

// MarshalSigner renders the private key of s as PEM PKCS #8.
func MarshalSigner(s Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(s.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func checkKeyType(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return errors.New("ECDSA keys must use P-256")
		}
		return nil
	default:
		return fmt.Errorf("unsupported key type %T (want Ed25519 or ECDSA P-256)", pub)
	}
}
