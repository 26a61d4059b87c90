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

package trust_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/infra/trust/trusttest"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

type infraSig = infrav1alpha1.TrustSignature

func asSig(v any) *infraSig { return v.(*infraSig) }

type goldenIn struct {
	KeyID    string       `json:"keyID"`
	SignedAt string       `json:"signedAt"`
	Fields   trust.Fields `json:"fields"`
}

type goldenOut struct {
	Canonical string `json:"canonical"`
	Signature string `json:"signature"`
}

// TestCanonicalGolden pins the canonical encoding and the Ed25519 signature
// over it (Ed25519 is deterministic) for each testdata/canonical/*.in.yaml.
func TestCanonicalGolden(t *testing.T) {
	ins, err := filepath.Glob("testdata/canonical/*.in.yaml")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	seen := map[string]string{}
	for _, in := range ins {
		t.Run(filepath.Base(in), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var g goldenIn
			if err := yaml.UnmarshalStrict(raw, &g); err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339, g.SignedAt)
			if err != nil {
				t.Fatal(err)
			}
			msg := trust.Canonical(g.Fields, g.KeyID, at)
			s := trusttest.Signer(g.KeyID, "golden")
			sig, err := s.Sign(g.Fields, at)
			if err != nil {
				t.Fatal(err)
			}
			got := goldenOut{Canonical: hex.EncodeToString(msg), Signature: base64.StdEncoding.EncodeToString(sig.Signature)}
			if other, dup := seen[got.Canonical]; dup {
				t.Fatalf("%s encodes to the same bytes as %s", in, other)
			}
			seen[got.Canonical] = in
			outPath := strings.TrimSuffix(in, ".in.yaml") + ".out.yaml"
			gotYAML, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, outPath, gotYAML)
			if err := trusttest.KeySet(s).Verify(g.Fields, sig); err != nil {
				t.Fatalf("golden signature does not verify: %v", err)
			}
		})
	}
}

// TestCanonicalLayout checks the documented layout byte by byte.
func TestCanonicalLayout(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	got := trust.Canonical(trust.Fields{Name: "n", APIServerEndpoint: "e:1", Certificates: "", RelayRoots: "r"}, "k", at)
	var want []byte
	for _, f := range []string{trust.DomainTag, "k", "2026-11-01T00:00:00Z", "n", "e:1", "", "r"} {
		want = append(want, byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f)))
		want = append(want, f...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical layout:\nwant %x\ngot  %x", want, got)
	}
}

func fields() trust.Fields {
	return trust.Fields{Name: "5f0c8a7e-3b7d-4d8e-9a51-0c2f6b1e9d43", APIServerEndpoint: "p.svc:6443",
		Certificates: "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n"}
}

func TestVerifyRefusals(t *testing.T) {
	good := trusttest.Signer("cosmos-1", "a")
	stranger := trusttest.Signer("cosmos-1", "b") // same key ID, different key: a forgery
	unknown := trusttest.Signer("cosmos-9", "c")
	ks := trusttest.KeySet(good)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	f := fields()

	sig, err := good.Sign(f, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := ks.Verify(f, sig); err != nil {
		t.Fatalf("valid signature refused: %v", err)
	}
	forged, _ := stranger.Sign(f, at)
	unk, _ := unknown.Sign(f, at)
	tampered := sig.DeepCopy()
	tampered.SignedAt = metav1.NewTime(at.Add(time.Hour))
	flipped := sig.DeepCopy()
	flipped.Signature[0] ^= 1
	changed := f
	changed.APIServerEndpoint = "evil.svc:6443"

	cases := []struct {
		name string
		f    trust.Fields
		sig  any
		want error
	}{
		{"nil signature", f, nil, trust.ErrUnsigned},
		{"forged by another key under a known ID", f, forged, trust.ErrBadSignature},
		{"unknown key ID", f, unk, trust.ErrUnknownKey},
		{"signedAt moved after signing", f, tampered, trust.ErrBadSignature},
		{"flipped signature bit", f, flipped, trust.ErrBadSignature},
		{"field changed after signing", changed, sig, trust.ErrBadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			switch s := c.sig.(type) {
			case nil:
				err = ks.Verify(c.f, nil)
			default:
				err = ks.Verify(c.f, asSig(s))
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
		})
	}
}

func TestECDSAP256(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := trust.Signer{KeyID: "p256", Key: k}
	sig, err := s.Sign(fields(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := trusttest.KeySet(s).Verify(fields(), sig); err != nil {
		t.Fatal(err)
	}
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	pemKey, _ := trust.MarshalSigner(trust.Signer{KeyID: "x", Key: k384})
	if _, err := trust.ParseSigner("x", pemKey); err == nil {
		t.Fatal("P-384 signing key accepted")
	}
}

func TestKeyFileRoundTrip(t *testing.T) {
	a, b := trusttest.Signer("a", "a"), trusttest.Signer("b", "b")
	data, err := trust.MarshalKeySet(trusttest.KeySet(a, b))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := trust.LoadKeySet(path)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := b.Sign(fields(), time.Now())
	if err := ks.Verify(fields(), sig); err != nil {
		t.Fatal(err)
	}
	priv, err := trust.MarshalSigner(a)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := trust.ParseSigner("a", priv)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ = a2.Sign(fields(), time.Now())
	if err := ks.Verify(fields(), sig); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"empty":       "keys: {}\n",
		"not pem":     "keys:\n  a: hello\n",
		"unknown key": "keyz: {}\n",
		"not yaml":    "::::",
	} {
		if _, err := trust.ParseKeySet([]byte(bad)); err == nil {
			t.Errorf("%s: key file accepted", name)
		}
	}
}

// TestDecide is the acceptance rule table: a change of signed fields needs a
// valid, fresh signature; otherwise the last accepted values are kept.
func TestDecide(t *testing.T) {
	good := trusttest.Signer("cosmos-1", "a")
	ks := trusttest.KeySet(good)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	f0 := fields()
	sig0, _ := good.Sign(f0, t0)
	acc0 := &trust.Accepted{Fields: f0, Signature: *sig0}
	f1 := f0
	f1.APIServerEndpoint = "q.svc:6443"
	sig1, _ := good.Sign(f1, t0.Add(time.Minute))
	stale1, _ := good.Sign(f1, t0.Add(-time.Minute))
	resig0, _ := good.Sign(f0, t0.Add(time.Hour))
	forged1, _ := trusttest.Signer("cosmos-1", "mallory").Sign(f1, t0.Add(time.Minute))

	cases := []struct {
		name    string
		prev    *trust.Accepted
		f       trust.Fields
		sig     *infraSig
		want    trust.Decision
		wantAcc *trust.Accepted
		wantErr error
	}{
		{"first sight, valid", nil, f0, sig0, trust.Accept, acc0, nil},
		{"first sight, unsigned", nil, f0, nil, trust.Refuse, nil, trust.ErrUnsigned},
		{"unchanged fields, same signature", acc0, f0, sig0, trust.Unchanged, acc0, nil},
		{"unchanged fields, signature removed", acc0, f0, nil, trust.Unchanged, acc0, nil},
		{"unchanged fields, re-signed later", acc0, f0, resig0, trust.Unchanged, &trust.Accepted{Fields: f0, Signature: *resig0}, nil},
		{"changed, valid and newer", acc0, f1, sig1, trust.Accept, &trust.Accepted{Fields: f1, Signature: *sig1}, nil},
		{"changed, valid but stale", acc0, f1, stale1, trust.Refuse, acc0, trust.ErrStale},
		{"changed, forged", acc0, f1, forged1, trust.Refuse, acc0, trust.ErrBadSignature},
		{"changed, old signature kept", acc0, f1, sig0, trust.Refuse, acc0, trust.ErrBadSignature},
		{"changed, unsigned", acc0, f1, nil, trust.Refuse, acc0, trust.ErrUnsigned},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, acc, err := trust.Decide(ks, c.prev, c.f, c.sig)
			if d != c.want {
				t.Fatalf("decision %v, want %v (err %v)", d, c.want, err)
			}
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, c.wantErr)
			}
			if (acc == nil) != (c.wantAcc == nil) || (acc != nil && (acc.Fields != c.wantAcc.Fields ||
				!bytes.Equal(acc.Signature.Signature, c.wantAcc.Signature.Signature))) {
				t.Fatalf("accepted %+v, want %+v", acc, c.wantAcc)
			}
		})
	}
}
