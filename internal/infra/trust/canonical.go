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

// Package trust holds the trust signature of infra Projects: the canonical
// encoding of the signed fields, Ed25519 (or ECDSA P-256) signing and
// verification, the key files, and the acceptance rule consumers apply to a
// change of the signed fields.
//
// # Canonical encoding
//
// The signed message is a sequence of fields, each written as its length
// (4 bytes, unsigned, big-endian) followed by its bytes. Strings are UTF-8 as
// stored; nothing is trimmed or normalised, so the bytes are exactly what the
// API server holds. The fields, in this order, are:
//
//  1. the domain tag "coxswain.infra.project-trust.v1"
//  2. trustSignature.keyID
//  3. trustSignature.signedAt, UTC, RFC 3339 with second precision
//     ("2006-01-02T15:04:05Z", the precision metav1.Time keeps)
//  4. metadata.name
//  5. spec.apiServerEndpoint
//  6. spec.agentCA.certificates ("" when agentCA is absent)
//  7. spec.relayRoots
//
// Length prefixes make the encoding injective: no two different field tuples
// produce the same bytes. Signing keyID and signedAt binds the signature to
// its key and time, so a replayed old signature cannot carry a new signedAt.
// Ed25519 signs the message itself; ECDSA P-256 signs its SHA-256 digest
// (ASN.1 DER signature).
package trust

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

// DomainTag is the first field of every signed message.
const DomainTag = "coxswain.infra.project-trust.v1"

// TimeFormat is the layout of signedAt in the signed message.
const TimeFormat = "2006-01-02T15:04:05Z"

// Fields are the signed fields of a Project.
type Fields struct {
	Name              string `json:"name"`
	APIServerEndpoint string `json:"apiServerEndpoint"`
	Certificates      string `json:"certificates"`
	RelayRoots        string `json:"relayRoots"`
}

// FieldsOf extracts the signed fields of p.
func FieldsOf(p *infrav1alpha1.Project) Fields {
	f := Fields{Name: p.Name, APIServerEndpoint: p.Spec.APIServerEndpoint, RelayRoots: p.Spec.RelayRoots}
	if p.Spec.AgentCA != nil {
		f.Certificates = p.Spec.AgentCA.Certificates
	}
	return f
}

// Canonical returns the bytes a trust signature covers. It panics on a field
// of 4 GiB or more, which no Project can hold (the API caps each signed field
// at 64 KiB): its length prefix would wrap and two different tuples could
// encode alike.
func Canonical(f Fields, keyID string, signedAt time.Time) []byte {
	fields := []string{
		DomainTag,
		keyID,
		signedAt.UTC().Format(TimeFormat),
		f.Name,
		f.APIServerEndpoint,
		f.Certificates,
		f.RelayRoots,
	}
	n := 0
	for _, s := range fields {
		n += 4 + len(s)
	}
	out := make([]byte, 0, n)
	for _, s := range fields {
		out = appendField(out, s)
	}
	return out
}

// appendField appends s with its length prefix.
func appendField(out []byte, s string) []byte {
	n := len(s)
	if uint64(n) > math.MaxUint32 {
		panic(fmt.Sprintf("trust: a signed field of %d bytes does not fit the canonical encoding's 4-byte length", n))
	}
	out = binary.BigEndian.AppendUint32(out, uint32(n))
	return append(out, s...)
}
