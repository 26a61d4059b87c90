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
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/status/writer"
)

// epochDataPlane is a scripted data plane that counts its changes and the
// questions it is asked.
type epochDataPlane struct {
	*scriptedDataPlane
	mu           sync.Mutex
	epoch, asked uint64
}

func (d *epochDataPlane) Gateway(ns, name string, generation int64) writer.GatewayDataPlane {
	d.mu.Lock()
	d.asked++
	d.mu.Unlock()
	return d.scriptedDataPlane.Gateway(ns, name, generation)
}

func (d *epochDataPlane) Epoch() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.epoch
}

func (d *epochDataPlane) bump() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.epoch++
}

func (d *epochDataPlane) questions() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked
}

// TestGatewayRoundAsksOnlyAfterAChange: a running writer asks the data
// plane about a Gateway whose desired status it settled only after a
// change: the data plane's (its epoch), the Gateway's (an informer event,
// ours or another writer's, whose edit is still undone) or the desired
// status's.
func TestGatewayRoundAsksOnlyAfterAChange(t *testing.T) {
	f, _ := informerFixture(t, "gateway-walk")
	dp := &epochDataPlane{scriptedDataPlane: f.dp}
	f.w.DataPlane = dp
	dp.set(1, shared(1, 1))
	go func() { _ = f.w.Start(f.ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !writer.ChangesTracked(f.w, "Gateway"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer does not track Gateway changes")
		}
	}
	waitEvent := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !writer.ChangePending(f.w, "Gateway", f.key); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the writer saw no event for the Gateway")
			}
		}
	}
	asked := func(step string, want uint64) {
		t.Helper()
		if got := dp.questions(); got != want {
			t.Fatalf("%s: the data plane was asked %d times in all, want %d", step, got, want)
		}
	}
	programmedAcked := func(step string) {
		t.Helper()
		if c := meta.FindStatusCondition(f.gateway().Status.Conditions, status.TypeProgrammed); c == nil || c.Message == "tampered" || c.Status != "True" {
			t.Fatalf("%s: Programmed is %+v", step, c)
		}
	}

	f.write()
	asked("first round", 1)
	programmedAcked("first round")
	waitEvent() // our own patch
	f.write()
	asked("the round after our patch", 2)
	f.write()
	asked("a round with nothing changed", 2)
	f.write()
	asked("another round with nothing changed", 2)

	dp.bump()
	f.write()
	asked("the round after a data-plane change", 3)
	f.write()
	asked("the round after that", 3)

	gw := f.gateway()
	c := meta.FindStatusCondition(gw.Status.Conditions, status.TypeProgrammed)
	c.Message = "tampered"
	if err := kube.Status().Update(f.ctx, gw); err != nil {
		t.Fatal(err)
	}
	waitEvent()
	f.write()
	asked("the round after another writer's edit", 4)
	programmedAcked("the round after another writer's edit")

	f.res = nil // a new desired status, equal but not the same lists
	waitEvent() // the edit undone
	f.write()
	asked("the round with a new desired status", 5)
}
