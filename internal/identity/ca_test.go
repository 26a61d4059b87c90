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

package identity_test

import (
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/identity"
)

func TestSetAuthorityRejectsBadInput(t *testing.T) {
	_, cert1, key1 := newCA(t)
	_, _, key2 := newCA(t)
	ca := identity.NewCA(td)
	// A leaf SVID is not a CA.
	id, _ := svidID("apps", "x")
	issuer, _, _ := newCA(t)
	leafKey := mustKey(t)
	leaf, err := issuer.SignPublicKey(leafKey.Public(), id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		cert, key  []byte
		wantSubstr string
	}{
		{"empty", nil, nil, "no PEM certificate"},
		{"not a CA", identity.EncodeCerts(leaf), key1, "not a CA"},
		{"key of another CA", cert1, key2, "does not match"},
		{"garbage key", cert1, []byte("junk"), "no PEM block"},
	}
	for _, c := range cases {
		if _, err := ca.SetAuthority(c.cert, c.key, nil); err == nil || !strings.Contains(err.Error(), c.wantSubstr) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.wantSubstr)
		}
	}
	if ca.Ready() {
		t.Fatal("a CA that failed every load must not be ready")
	}
	if changed, err := ca.SetAuthority(cert1, key1, nil); err != nil || !changed {
		t.Fatalf("valid authority: changed=%v err=%v", changed, err)
	}
	if changed, _ := ca.SetAuthority(cert1, key1, nil); changed {
		t.Fatal("reloading the same authority must not count as a change")
	}
	// An SVID outside the trust domain is refused.
	other, _ := svidIDIn("example.org", "a", "b")
	if _, err := ca.SignPublicKey(leafKey.Public(), other, time.Hour); err == nil {
		t.Fatal("signed an ID of another trust domain")
	}
}
