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
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	cases := []struct {
		name     string
		holds    bool
		attempts int
		lo, hi   time.Duration // bounds of the last delay
	}{
		{"first retry", false, 1, 125 * time.Millisecond, 250 * time.Millisecond},
		{"second retry doubles", false, 2, 250 * time.Millisecond, 500 * time.Millisecond},
		{"caps at 30s without a snapshot", false, 30, 15 * time.Second, 30 * time.Second},
		{"caps at 4s with a snapshot", true, 30, 2 * time.Second, 4 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for trial := 0; trial < 50; trial++ {
				b := &backoff{}
				var d time.Duration
				for range c.attempts {
					d = b.next(c.holds)
				}
				if d < c.lo || d > c.hi {
					t.Fatalf("delay %v outside [%v, %v]", d, c.lo, c.hi)
				}
			}
		})
	}
}

func TestNotLeaderRetryIsFastThenWidens(t *testing.T) {
	b := &backoff{}
	for i := 1; i <= 25; i++ {
		d := b.notLeader()
		lo, hi := 250*time.Millisecond, 500*time.Millisecond
		if i > 20 {
			lo, hi = 500*time.Millisecond, 2*time.Second
		}
		if d < lo || d > hi {
			t.Fatalf("not-the-leader retry %d: %v outside [%v, %v]", i, d, lo, hi)
		}
	}
	b.reset()
	if d := b.notLeader(); d > 500*time.Millisecond {
		t.Fatalf("reset must restore the fast retry, got %v", d)
	}
}

func TestEndpointParsing(t *testing.T) {
	good := map[string]string{
		"https://coxswain-controller-discovery.coxswain-system.svc:50051": "coxswain-controller-discovery.coxswain-system.svc:50051",
		"https://127.0.0.1:50051/":                                        "127.0.0.1:50051",
	}
	for in, want := range good {
		if got, err := hostPort(in); err != nil || got != want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"http://x:1", "x:1", "https://x", "https://x:1/path", "grpc://x:1"} {
		if _, err := hostPort(in); err == nil {
			t.Errorf("hostPort(%q) accepted a non-https or portless endpoint", in)
		}
	}
	if got := ParseEndpoints(" https://a:1, ,https://b:2 "); len(got) != 2 || got[0] != "https://a:1" || got[1] != "https://b:2" {
		t.Errorf("ParseEndpoints = %v", got)
	}
}
