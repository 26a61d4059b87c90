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

package memrelease

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestReleasesOnceAfterTheLastBusy: a run of Busy calls releases once,
// after the last of them, and a later burst releases again.
func TestReleasesOnceAfterTheLastBusy(t *testing.T) {
	var released atomic.Int32
	r := &Releaser{Quiet: 200 * time.Millisecond, Release: func() { released.Add(1) }}
	defer r.Stop()
	began := time.Now()
	var last time.Time
	for i := range 5 {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		r.Busy()
		last = time.Now()
	}
	waitFor(t, &released, 1)
	if since := time.Since(last); since < r.Quiet {
		t.Fatalf("released %s after the last Busy, before the quiet period of %s", since, r.Quiet)
	}
	if elapsed := time.Since(began); elapsed < 4*20*time.Millisecond+r.Quiet {
		t.Fatalf("released %s after the first Busy: a later Busy did not postpone it", elapsed)
	}
	time.Sleep(2 * r.Quiet)
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times for one burst", n)
	}
	r.Busy()
	waitFor(t, &released, 2)
}

// TestStopCancels: no release after Stop.
func TestStopCancels(t *testing.T) {
	var released atomic.Int32
	r := &Releaser{Quiet: 50 * time.Millisecond, Release: func() { released.Add(1) }}
	r.Busy()
	r.Stop()
	time.Sleep(200 * time.Millisecond)
	if n := released.Load(); n != 0 {
		t.Fatalf("released %d times after Stop", n)
	}
}

// TestDefaultReleaseRuns: the zero Releaser's release (debug.FreeOSMemory)
// runs without a hook.
func TestDefaultReleaseRuns(t *testing.T) {
	(&Releaser{}).release()
}

func waitFor(t *testing.T, n *atomic.Int32, want int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("released %d times, want %d", n.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
