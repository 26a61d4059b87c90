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

// Package trusttest holds deterministic SAMPLE-ONLY keys for tests and for
// regenerating config/samples. The seeds are public: never use these keys
// for anything but tests and samples.
package trusttest

import (
	"crypto/ed25519"
	"crypto/sha256"

	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

// SampleKeyID is the key ID of the sample signing key.
const SampleKeyID = "coxswain-sample-2026-11"

// Signer returns a deterministic Ed25519 signer derived from name. It is
// SAMPLE-ONLY: anyone can derive the private key from the name.
func Signer(keyID, name string) trust.Signer {
	seed := sha256.Sum256([]byte("coxswain sample-only trust key, NOT SECRET: " + name))
	return trust.Signer{KeyID: keyID, Key: ed25519.NewKeyFromSeed(seed[:])}
}

// SampleSigner is the signer of config/samples (SAMPLE-ONLY).
func SampleSigner() trust.Signer { return Signer(SampleKeyID, "config/samples") }

// KeySet returns the verification keys of signers.
func KeySet(signers ...trust.Signer) trust.KeySet {
	ks := trust.KeySet{}
	for _, s := range signers {
		ks[s.KeyID] = s.Key.Public()
	}
	return ks
}

// SampleKEK is the sample key-encryption key of config/samples (SAMPLE-ONLY).
func SampleKEK() []byte {
	k := sha256.Sum256([]byte("coxswain sample-only key-encryption key, NOT SECRET"))
	return k[:]
}
