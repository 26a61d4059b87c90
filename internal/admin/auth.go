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

package admin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Authorizer decides whether a bearer token may read the admin API.
type Authorizer interface {
	// Authorize returns the user the token belongs to, or an error that
	// wraps ErrUnauthenticated or ErrForbidden.
	Authorize(ctx context.Context, token string) (user string, err error)
}

// The two refusals: 401 and 403.
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
)

// ReadAccess is the permission that opens the admin API: whoever may get
// Gateways (in any namespace) may read what the controller serves.
var ReadAccess = authorizationv1.ResourceAttributes{Verb: "get", Group: "gateway.networking.k8s.io", Resource: "gateways"}

// ReviewAuthorizer authenticates tokens with a TokenReview and authorizes
// their users with a SubjectAccessReview, both against the API server, and
// remembers each answer for TTL.
type ReviewAuthorizer struct {
	Client kubernetes.Interface
	// TTL of a remembered answer (default 10s); MaxEntries bounds the
	// memory (default 1024; the whole memory is dropped when full).
	TTL        time.Duration
	MaxEntries int

	mu    sync.Mutex
	cache map[[sha256.Size]byte]decision
}

type decision struct {
	user    string
	err     error
	expires time.Time
}

// Authorize implements Authorizer.
func (a *ReviewAuthorizer) Authorize(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	a.mu.Lock()
	if d, ok := a.cache[key]; ok && now.Before(d.expires) {
		a.mu.Unlock()
		return d.user, d.err
	}
	a.mu.Unlock()
	user, err := a.review(ctx, token)
	if err != nil && !errors.Is(err, ErrUnauthenticated) && !errors.Is(err, ErrForbidden) {
		return "", err // the API server failed: do not remember it
	}
	ttl, maxEntries := a.TTL, a.MaxEntries
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	if maxEntries <= 0 {
		maxEntries = 1024
	}
	a.mu.Lock()
	if a.cache == nil || len(a.cache) >= maxEntries {
		a.cache = map[[sha256.Size]byte]decision{}
	}
	a.cache[key] = decision{user: user, err: err, expires: now.Add(ttl)}
	a.mu.Unlock()
	return user, err
}

func (a *ReviewAuthorizer) review(ctx context.Context, token string) (string, error) {
	tr, err := a.Client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		msg := tr.Status.Error
		if msg == "" {
			msg = "the token is not valid"
		}
		return "", fmt.Errorf("%w: %s", ErrUnauthenticated, msg)
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	attrs := ReadAccess
	sar, err := a.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed {
		return u.Username, fmt.Errorf("%w: %s may not get gateways.gateway.networking.k8s.io", ErrForbidden, u.Username)
	}
	return u.Username, nil
}
