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

// Package memrelease gives the heap's free memory back to the operating
// system once a process has been quiet for a while after a burst of work.
//
// A rebuild in the controller or a snapshot swap in the proxy allocates
// the new state while the old one is still live, so the Go heap's goal
// (twice the live heap at the last collection) is set while both exist.
// With no further allocation no collection comes to lower it, and the
// runtime keeps those pages: at 10,000 routes the controller's resident
// memory stayed at over three times its live heap once changes stopped.
// A Releaser collects and returns the free pages (debug.FreeOSMemory)
// once no burst came for Quiet, so an idle process is as large as what it
// holds. It costs one collection per quiet period. On Linux it also
// unmaps the pages of the executable it read once and may not read again
// (releaseBinary).
package memrelease

import (
	"runtime/debug"
	"sync"
	"time"
)

// DefaultQuiet is how long after the last burst a Releaser returns memory.
const DefaultQuiet = 3 * time.Second

// Releaser returns free heap memory to the operating system Quiet after
// the last Busy call. The zero value uses DefaultQuiet,
// debug.FreeOSMemory and releaseBinary; it is safe for concurrent use.
type Releaser struct {
	// Quiet is how long after the last Busy the memory is returned
	// (DefaultQuiet when zero).
	Quiet time.Duration
	// Release returns the memory (debug.FreeOSMemory and releaseBinary
	// when nil).
	Release func()

	mu    sync.Mutex
	timer *time.Timer
}

// Busy notes the end of a burst of work: the memory is returned once no
// other Busy came for Quiet.
func (r *Releaser) Busy() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Reset(r.quiet())
		return
	}
	r.timer = time.AfterFunc(r.quiet(), r.release)
}

// Stop cancels a pending release.
func (r *Releaser) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
}

func (r *Releaser) quiet() time.Duration {
	if r.Quiet > 0 {
		return r.Quiet
	}
	return DefaultQuiet
}

func (r *Releaser) release() {
	if r.Release != nil {
		r.Release()
		return
	}
	debug.FreeOSMemory()
	releaseBinary()
}
