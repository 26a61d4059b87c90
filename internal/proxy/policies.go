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

package proxy

import (
	"net/http"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The policy layer. Each policy of the snapshot (snapshot/policies.go) is
// one filter file here, its compile half next to its apply half:
// clientip.go (client IP detection), ipaccess.go, ratelimit.go,
// basicauth.go, jwtauth.go, extauth.go, compression.go, and on endpoint
// sets backendpolicy.go (hashing, circuit breaking, outlier detection,
// health checks); clienttraffic.go applies a listener's ClientTraffic.
// The route filters run in this order, after the route matched (step 4 of
// serve.go) and before its redirect, direct response and backends:
//
//  4a. client IP: the address the policies below see (clientip.go);
//  4b. IP access control: 403 (ipaccess.go);
//  5.  CORS preflight (cors.go) — a preflight carries no credentials, so
//      it is answered before authentication, as browsers require;
//  5a. rate limit: 429, or 503 when a global store fails closed
//      (ratelimit.go) — before authentication, as nginx's limit_req runs
//      before its access phase, so floods never reach the credential
//      checks;
//  5b. basic auth: 401 (basicauth.go);
//  5c. JWT: 401 (jwtauth.go);
//  5d. external auth: the server's denial, or 503 (extauth.go);
//  then steps 6 to 12, with compression (compression.go) wrapping the
//  response writer around the forward.
//
// A filter that admits the request may add upstream request headers (the
// JWT claims, the external server's headers); they replace client-sent
// ones of the same name.

// policyEnv is what the policy filters keep across snapshots: one field
// per filter, owned by its file.
type policyEnv struct {
	rateStore *rateLimitStore // ratelimit.go
	jwks      *jwksCache      // jwtauth.go
	extAuth   *extAuthClients // extauth.go
	backends  *backendState   // backendpolicy.go
}

// newPolicyEnv builds the filters' long-lived state for a data plane.
func newPolicyEnv(d *DataPlane) *policyEnv {
	return &policyEnv{
		rateStore: newRateLimitStore(d),
		jwks:      newJWKSCache(d),
		extAuth:   newExtAuthClients(d),
		backends:  newBackendState(d),
	}
}

// close stops the filters' background work (health checks, connections to
// Redis and authorization servers) once the data plane shut down.
func (e *policyEnv) close() {
	e.rateStore.close()
	e.extAuth.close()
	e.backends.close()
}

// routePolicies are the compiled policy filters of one route.
type routePolicies struct {
	clientIP    *clientIPPolicy
	ipAccess    *ipAccessPolicy
	rateLimit   *rateLimitPolicy
	basicAuth   *basicAuthPolicy
	jwt         *jwtPolicy
	extAuth     *extAuthPolicy
	compression *compressionPolicy
	pathNorm    *snapshot.PathNormalization
}

// compilePolicies compiles a snapshot route's policies onto r; lr is its
// listener (the default client IP detection).
func (c *compiler) compilePolicies(in *snapshot.Route, r *route, lr *listenerRouter) error {
	var err error
	p := &r.policies
	if p.clientIP, err = compileClientIP(in.ClientIP, lr); err != nil {
		return err
	}
	if p.ipAccess, err = compileIPAccess(in.IPAccess); err != nil {
		return err
	}
	if p.rateLimit, err = c.compileRateLimit(in.RateLimit, r); err != nil {
		return err
	}
	if p.basicAuth, err = compileBasicAuth(in.BasicAuth); err != nil {
		return err
	}
	if p.jwt, err = c.compileJWT(in.JWT); err != nil {
		return err
	}
	if p.extAuth, err = c.compileExtAuth(in.ExtAuth); err != nil {
		return err
	}
	if p.compression, err = compileCompression(in.Compression); err != nil {
		return err
	}
	p.pathNorm = in.PathNormalization
	return nil
}

// admitBeforeCORS runs steps 4a and 4b, after refusing with 400 a request
// without the verified client certificate its route requires; false when
// it answered.
func (d *DataPlane) admitBeforeCORS(ex *exchange, r *http.Request, rt *route) bool {
	if rt.requireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		answer(ex, http.StatusBadRequest, "no required SSL certificate was sent")
		return false
	}
	p := &rt.policies
	ex.clientIP = p.clientIP.clientIP(r)
	return p.ipAccess.admit(ex, ex.clientIP)
}

// admitAfterCORS runs steps 5a to 5d; false when it answered.
func (d *DataPlane) admitAfterCORS(ex *exchange, r *http.Request, rt *route) bool {
	p := &rt.policies
	return p.rateLimit.admit(ex, r, rt) &&
		p.basicAuth.admit(ex, r) &&
		p.jwt.admit(ex, r) &&
		p.extAuth.admit(ex, r, rt)
}
