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

package writer_test

import (
	"context"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/status/writer"
)

// TestGatherTakesTheNotificationsOfTheWait: the notifications that come
// while Start waits after the first (a change's published snapshot, its
// Result, the proxies' acks) are taken with it, for one round; one that
// comes after the wait is left for the next round; no wait takes none.
func TestGatherTakesTheNotificationsOfTheWait(t *testing.T) {
	notify := make(chan struct{}, 1)
	send := func() {
		select {
		case notify <- struct{}{}:
		default:
		}
	}
	pending := func() bool {
		select {
		case <-notify:
			return true
		default:
			return false
		}
	}
	ctx := t.Context()
	const d = 100 * time.Millisecond
	go func() {
		send()
		time.Sleep(d / 4)
		send()
	}()
	began := time.Now()
	if !writer.GatherNotifications(ctx, notify, d) {
		t.Fatal("gather stopped before ctx ended")
	}
	if took := time.Since(began); took < d {
		t.Fatalf("gather returned after %v, before its %v", took, d)
	}
	if pending() {
		t.Fatal("a notification of the wait was left for another round")
	}
	send() // after the wait
	if !writer.GatherNotifications(ctx, notify, 0) || !pending() {
		t.Fatal("without a wait a notification was taken")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if writer.GatherNotifications(done, notify, time.Hour) {
		t.Fatal("gather went on after ctx ended")
	}
}
