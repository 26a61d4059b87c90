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

// Command policytoken makes the throwaway credentials of
// bench/policies.sh: a fresh ES256 key, its public JWKS, a token it signed
// (valid for ten years), and the bcrypt hash of a Basic auth password. It
// prints three lines, "jwks <JSON>", "token <JWT>" and "bcrypt <hash>";
// nothing is written to disk and the key dies with the process.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/crypto/bcrypt"
)

func main() {
	issuer := flag.String("issuer", "https://issuer.bench.local", "the token's iss")
	audience := flag.String("audience", "coxswain-bench", "the token's aud")
	subject := flag.String("subject", "bench", "the token's sub")
	kid := flag.String("kid", "bench", "the key id (JWKS kid and token header)")
	password := flag.String("password", "bench-password", "the Basic auth password to hash")
	cost := flag.Int("cost", 10, "bcrypt cost")
	flag.Parse()

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &key.PublicKey, KeyID: *kid, Algorithm: string(jose.ES256), Use: "sig",
	}}})
	if err != nil {
		log.Fatal(err)
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: *kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		log.Fatal(err)
	}
	// iat and nbf a minute back, so a proxy whose clock lags a little
	// does not see a token from the future.
	now := time.Now().Add(-time.Minute)
	token, err := jwt.Signed(signer).Claims(jwt.Claims{
		Issuer:    *issuer,
		Subject:   *subject,
		Audience:  jwt.Audience{*audience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.AddDate(10, 0, 0)),
	}).Serialize()
	if err != nil {
		log.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(*password), *cost)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("jwks %s\ntoken %s\nbcrypt %s\n", jwks, token, hash)
}
