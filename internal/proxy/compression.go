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

// compressionPolicy is a route's compiled snapshot.Compression.
type compressionPolicy struct{}

func compileCompression(in *snapshot.Compression) (*compressionPolicy, error) {
	return nil, nil
}

// wrap makes ex compress what the route answers, when r accepts it; the
// returned finish must be called once the answer is written.
func (p *compressionPolicy) wrap(ex *exchange, r *http.Request) (finish func()) {
	return func() {}
}
