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
	"crypto/rand"
	"math/big"
	"time"
)

// backoff is jittered exponential from 250ms to 30s (4s once the proxy holds
// a snapshot), and a fast 250–500ms retry for "not the leader", widening to
// 0.5–2s after 20 of them in a row.
type backoff struct {
	attempt    int
	notLeaderN int
}

func (b *backoff) reset() { b.attempt, b.notLeaderN = 0, 0 }

func (b *backoff) next(holdsSnapshot bool) time.Duration {
	maxD := 30 * time.Second
	if holdsSnapshot {
		maxD = 4 * time.Second
	}
	d := 250 * time.Millisecond << min(b.attempt, 10)
	if d > maxD {
		d = maxD
	}
	b.attempt++
	// Full jitter over [d/2, d].
	return d/2 + randDuration(d/2)
}

func (b *backoff) notLeader() time.Duration {
	b.notLeaderN++
	if b.notLeaderN > 20 {
		return 500*time.Millisecond + randDuration(1500*time.Millisecond)
	}
	return 250*time.Millisecond + randDuration(250*time.Millisecond)
}

func randDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(d)))
	if err != nil {
		return d / 2
	}
	return time.Duration(n.Int64())
}
