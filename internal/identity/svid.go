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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

// ServingSVID is the controller's own SVID, used as the server certificate of
// both discovery listeners. It implements x509svid.Source: the key lives in
// memory, and the SVID is reissued at half of its lifetime and whenever the
// CA's authority changes.
type ServingSVID struct {
	ca  *CA
	id  spiffeid.ID
	ttl time.Duration
	key crypto.Signer

	mu      sync.Mutex
	svid    *x509svid.SVID
	gen     uint64
	renewAt time.Time
}

// NewServingSVID creates the key pair for id; the SVID is issued on first use.
func NewServingSVID(ca *CA, id spiffeid.ID, ttl time.Duration) (*ServingSVID, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = DefaultSVIDTTL
	}
	return &ServingSVID{ca: ca, id: id, ttl: ttl, key: key}, nil
}

// ID is the SPIFFE ID this SVID carries.
func (s *ServingSVID) ID() spiffeid.ID { return s.id }

// GetX509SVID implements x509svid.Source.
func (s *ServingSVID) GetX509SVID() (*x509svid.SVID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.ca.Generation()
	if s.svid != nil && gen == s.gen && s.ca.now().Before(s.renewAt) {
		return s.svid, nil
	}
	certs, err := s.ca.SignPublicKey(s.key.Public(), s.id, s.ttl)
	if err != nil {
		if s.svid != nil {
			return s.svid, nil // keep serving the old one until it can be renewed
		}
		return nil, err
	}
	leaf := certs[0]
	s.svid = &x509svid.SVID{ID: s.id, Certificates: certs, PrivateKey: s.key}
	s.gen = gen
	now := s.ca.now()
	s.renewAt = now.Add(leaf.NotAfter.Sub(now) / 2)
	return s.svid, nil
}
