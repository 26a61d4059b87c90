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
	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

// Accepted is what a consumer last accepted for one Project: the signed
// fields and the signature that covered them.
type Accepted struct {
	Fields    Fields                       `json:"fields"`
	Signature infrav1alpha1.TrustSignature `json:"signature"`
}

// Decision is the outcome of Decide.
type Decision int

const (
	// Unchanged means the signed fields equal the accepted ones. The
	// returned Accepted may carry a newer valid signature over the same
	// fields.
	Unchanged Decision = iota
	// Accept means the signed fields changed and the change is validly
	// signed.
	Accept
	// Refuse means the signed fields changed without a valid, fresh
	// signature. The caller keeps the accepted values (nothing to keep on first sight).
	Refuse
)

// Decide applies the trust rule to an observed Project: a change of any
// signed field is accepted only with a signature that verifies under ks and
// whose signedAt is not older than the accepted one. prev is nil when nothing
// was accepted yet. It returns what is accepted afterwards (prev itself on
// Refuse) and, on Refuse, the reason.
func Decide(ks KeySet, prev *Accepted, f Fields, sig *infrav1alpha1.TrustSignature) (Decision, *Accepted, error) {
	verr := ks.Verify(f, sig)
	if verr == nil && prev != nil && sig.SignedAt.Before(&prev.Signature.SignedAt) {
		verr = ErrStale
	}
	if prev != nil && prev.Fields == f {
		if verr == nil {
			return Unchanged, &Accepted{Fields: f, Signature: *sig.DeepCopy()}, nil
		}
		return Unchanged, prev, nil
	}
	if verr != nil {
		return Refuse, prev, verr
	}
	return Accept, &Accepted{Fields: f, Signature: *sig.DeepCopy()}, nil
}
