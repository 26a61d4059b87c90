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
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestRoundIntervalSpacesBursts: with RoundInterval set, the first
// change after a quiet spell is written at once; changes that follow
// within the interval wait for it to pass and are written in one round,
// with the latest Result, and the notifications they brought start no
// round of their own.
func TestRoundIntervalSpacesBursts(t *testing.T) {
	const interval = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	// The client's first round looks up every kind the writer lists
	// (seconds); later ones take milliseconds.
	if err := (&writer.Writer{Client: kube}).Write(ctx, &translator.Result{}); err != nil {
		t.Fatal(err)
	}
	var rounds atomic.Int32
	w := &writer.Writer{Client: kube, RoundInterval: interval, AfterRound: func() { rounds.Add(1) }}
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	began := time.Now()
	first := &translator.Result{}
	w.Accept(ctx, first)
	testkit.EventuallyExplained(t, 10*time.Second, func() string {
		if rounds.Load() < 1 {
			time.Sleep(10 * time.Millisecond)
			return "no round yet"
		}
		return ""
	})
	if took := time.Since(began); took >= interval {
		t.Errorf("the first change was written after %s, not at once (interval %s)", took, interval)
	}
	if got := writer.Written(w); got != first {
		t.Fatalf("first round wrote %p, want %p", got, first)
	}

	// A burst: three Results, one right after the other.
	burst := []*translator.Result{{}, {}, {}}
	for _, res := range burst {
		w.Accept(ctx, res)
	}
	time.Sleep(interval / 4)
	if n := rounds.Load(); n != 1 {
		t.Fatalf("%d rounds a quarter of the interval after the burst, want 1 (the burst waits)", n)
	}
	testkit.EventuallyExplained(t, 10*time.Second, func() string {
		if rounds.Load() < 2 {
			time.Sleep(10 * time.Millisecond)
			return "the burst was not written"
		}
		return ""
	})
	if got := writer.Written(w); got != burst[len(burst)-1] {
		t.Errorf("the burst's round wrote %p, want the latest Result %p", got, burst[len(burst)-1])
	}
	// The burst's other notifications were taken by its round.
	time.Sleep(interval + interval/2)
	if n := rounds.Load(); n != 2 {
		t.Errorf("%d rounds after the burst was written, want 2", n)
	}
}
