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

package lifecycle

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KEK is a key-encryption key: it wraps and unwraps data keys. AESKEK keeps
// the key in a local file; a KMS client implements the same interface.
type KEK interface {
	WrapKey(ctx context.Context, dataKey []byte) ([]byte, error)
	UnwrapKey(ctx context.Context, wrapped []byte) ([]byte, error)
}

const (
	sealVersion = 1
	kekAAD      = "coxswain.infra.kek.v1"
)

// AESKEK wraps data keys with AES-256-GCM under a local 32-byte key. A
// wrapped key is version(1) || nonce(12) || ciphertext+tag.
type AESKEK struct {
	aead cipher.AEAD
}

// NewAESKEK returns a KEK for a 32-byte key.
func NewAESKEK(key []byte) (*AESKEK, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("key-encryption key must be 32 bytes (AES-256), got %d", len(key))
	}
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	return &AESKEK{aead: aead}, nil
}

// LoadKEKFile reads a KEK file holding 32 bytes raw, as 64 hex digits, or as
// base64.
func LoadKEKFile(path string) (*AESKEK, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading key-encryption key: %w", err)
	}
	if len(data) == 32 {
		return NewAESKEK(data)
	}
	s := strings.TrimSpace(string(data))
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return NewAESKEK(b)
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == 32 {
		return NewAESKEK(b)
	}
	return nil, fmt.Errorf("key-encryption key file %s: want 32 bytes raw, hex or base64", path)
}

// WrapKey implements KEK.
func (k *AESKEK) WrapKey(_ context.Context, dataKey []byte) ([]byte, error) {
	return seal(k.aead, dataKey, []byte(kekAAD))
}

// UnwrapKey implements KEK.
func (k *AESKEK) UnwrapKey(_ context.Context, wrapped []byte) ([]byte, error) {
	return open(k.aead, wrapped, []byte(kekAAD))
}

// Seal encrypts plaintext with a fresh random AES-256-GCM data key bound to
// aad, and wraps the data key with kek. It returns the sealed bytes
// (version || nonce || ciphertext+tag) and the wrapped data key.
func Seal(ctx context.Context, kek KEK, plaintext, aad []byte) (sealed, wrappedDataKey []byte, err error) {
	if kek == nil {
		return nil, nil, errors.New("no key-encryption key")
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, nil, err
	}
	defer clear(dataKey)
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, nil, err
	}
	if sealed, err = seal(aead, plaintext, aad); err != nil {
		return nil, nil, err
	}
	if wrappedDataKey, err = kek.WrapKey(ctx, dataKey); err != nil {
		return nil, nil, fmt.Errorf("wrapping the data key: %w", err)
	}
	return sealed, wrappedDataKey, nil
}

// Open reverses Seal.
func Open(ctx context.Context, kek KEK, sealed, wrappedDataKey, aad []byte) ([]byte, error) {
	if kek == nil {
		return nil, errors.New("no key-encryption key")
	}
	dataKey, err := kek.UnwrapKey(ctx, wrappedDataKey)
	if err != nil {
		return nil, fmt.Errorf("unwrapping the data key: %w", err)
	}
	defer clear(dataKey)
	if len(dataKey) != 32 {
		return nil, errors.New("unwrapped data key is not 32 bytes")
	}
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, err
	}
	return open(aead, sealed, aad)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func seal(aead cipher.AEAD, plaintext, aad []byte) ([]byte, error) {
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return aead.Seal(out, out[1:1+aead.NonceSize()], plaintext, aad), nil //nolint:gosec // G407: the nonce is out[1:], filled by crypto/rand just above, not hardcoded
}

func open(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < 1+aead.NonceSize()+aead.Overhead() || sealed[0] != sealVersion {
		return nil, errors.New("sealed data is malformed or of an unknown version")
	}
	pt, err := aead.Open(nil, sealed[1:1+aead.NonceSize()], sealed[1+aead.NonceSize():], aad)
	if err != nil {
		return nil, errors.New("sealed data does not open: wrong key, wrong project, or tampered")
	}
	return pt, nil
}
