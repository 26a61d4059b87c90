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
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrUnauthenticated marks a token the apiserver did not accept.
var ErrUnauthenticated = errors.New("token not authenticated")

// TokenReviewer checks ServiceAccount tokens with the TokenReview API.
type TokenReviewer struct {
	Client client.Client
	// Audience the token must be issued for (names.TokenAudience).
	Audience string
}

// Review returns the ServiceAccount a token belongs to. A token that is
// invalid, expired, for another audience or not a ServiceAccount's wraps
// ErrUnauthenticated; other errors are the apiserver's.
func (r *TokenReviewer) Review(ctx context.Context, token string) (namespace, serviceAccount string, err error) {
	if token == "" {
		return "", "", fmt.Errorf("%w: empty token", ErrUnauthenticated)
	}
	if r.Audience == "" {
		return "", "", errors.New("token reviewer has no audience")
	}
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{r.Audience}}}
	if err := r.Client.Create(ctx, tr); err != nil {
		return "", "", fmt.Errorf("TokenReview: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		msg := st.Error
		if msg == "" {
			msg = "rejected"
		}
		return "", "", fmt.Errorf("%w: %s", ErrUnauthenticated, msg)
	}
	if !slices.Contains(st.Audiences, r.Audience) {
		return "", "", fmt.Errorf("%w: token is not for audience %q", ErrUnauthenticated, r.Audience)
	}
	parts := strings.Split(st.User.Username, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" || parts[2] == "" || parts[3] == "" {
		return "", "", fmt.Errorf("%w: %q is not a ServiceAccount", ErrUnauthenticated, st.User.Username)
	}
	return parts[2], parts[3], nil
}
