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

package discovery

import (
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

// UseSVIDForTest hands c an SVID and trust bundle as if it had just
// bootstrapped, so that Run streams at once. The fan-out benchmark's
// clients skip the TokenReview bootstrap this way; everything after it
// (the stream's mTLS with the SVID, Subscribe, apply, Ack) is the real
// client's.
func UseSVIDForTest(c *Client, svid *x509svid.SVID, bundle *x509bundle.Bundle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.svid, c.bundle = svid, bundle
	now := time.Now()
	c.renewAt = now.Add(svid.Certificates[0].NotAfter.Sub(now) / 2)
}
