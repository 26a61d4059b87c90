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

package writer

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// GatewayDataPlane is the data plane's report on one generation of a
// Gateway.
type GatewayDataPlane struct {
	// Published is false while no published snapshot holds the Gateway.
	Published bool
	// Scope names the scope serving the Gateway (e.g. "shared").
	Scope string
	// Proxies is the number of connected proxies of Scope; Ready counts
	// those that bound the Gateway's ports and acked this generation (or a
	// later one).
	Proxies, Ready int
	// Rejections are the proxies whose last answer was a refusal of a
	// snapshot holding this generation (or a later one), ordered by node
	// id.
	Rejections []Rejection
}

// Rejection is one proxy's refusal of a snapshot.
type Rejection struct {
	NodeID     string
	Version    string
	Generation int64
	Detail     string
}

// Programmed is the bind-and-ack rule: every connected proxy of the scope
// ready, and at least one.
func (d GatewayDataPlane) Programmed() bool {
	return d.Published && d.Proxies > 0 && d.Ready == d.Proxies
}

// programmedGate decides one Gateway generation's Programmed conditions
// (the Gateway's and its listeners') from the data plane.
type programmedGate struct {
	dp         *GatewayDataPlane // nil: Programmed follows the snapshot
	scope      string
	generation int64
}

func (w *Writer) gateFor(d *translator.GatewayStatus, generation int64) programmedGate {
	g := programmedGate{scope: d.Scope.String(), generation: generation}
	if w.DataPlane == nil {
		return g
	}
	dp := w.DataPlane.Gateway(d.Namespace, d.Name, generation)
	if dp.Scope != "" {
		g.scope = dp.Scope
	}
	g.dp = &dp
	return g
}

// apply turns a translator Programmed=True into what the data plane
// confirms. In order:
//   - a proxy refused the snapshot holding this generation: False with
//     reason SnapshotRejected and the proxy's words (never hidden by the
//     latch);
//   - every connected proxy bound and acked it: True, with the counts;
//   - Programmed was already True for this generation: it stays True with
//     its message (proxies restarting or scaling do not flap status; the
//     message is the last time all of them had acked);
//   - otherwise False/Pending, saying what is awaited.
//
// A new generation (spec change) re-arms the gate, since the latch only
// holds a True of the same observedGeneration.
func (g programmedGate) apply(existing, conds []metav1.Condition) []metav1.Condition {
	if g.dp == nil {
		return conds
	}
	i := indexOf(conds, status.TypeProgrammed)
	if i < 0 || conds[i].Status != metav1.ConditionTrue {
		return conds
	}
	out := make([]metav1.Condition, len(conds))
	copy(out, conds)
	out[i] = g.verdict(meta.FindStatusCondition(existing, status.TypeProgrammed))
	return out
}

func (g programmedGate) verdict(prev *metav1.Condition) metav1.Condition {
	dp := g.dp
	switch {
	case len(dp.Rejections) > 0:
		first := dp.Rejections[0]
		return status.ProgrammedRejected(g.scope, len(dp.Rejections), dp.Proxies, g.generation, first.NodeID, first.Detail)
	case dp.Programmed():
		return status.ProgrammedAcked(g.scope, dp.Ready, dp.Proxies, g.generation)
	case prev != nil && prev.Status == metav1.ConditionTrue && prev.ObservedGeneration == g.generation:
		return status.Programmed(true, prev.Reason, prev.Message, g.generation)
	default:
		return status.ProgrammedPending(g.scope, dp.Published, dp.Ready, dp.Proxies, g.generation)
	}
}

func indexOf(conds []metav1.Condition, condType string) int {
	for i := range conds {
		if conds[i].Type == condType {
			return i
		}
	}
	return -1
}

// rejectionMemory is how long a rejection that stopped standing still
// suppresses a repeat Event: a proxy that crash-loops or reconnects and
// refuses again does not raise a new Event each time.
const rejectionMemory = 10 * time.Minute

// recordRejections raises one Warning Event per distinct refusal of the
// Gateway's current generation: keyed by Gateway, generation and the
// proxy's detail, not by proxy or snapshot version, so a pool refusing the
// same snapshot (or every endpoint-churn rebuild of it) is one Event.
func (w *Writer) recordRejections(gw *gwv1.Gateway, g programmedGate) {
	if w.Recorder == nil || g.dp == nil || len(g.dp.Rejections) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.Now()
	for _, r := range g.dp.Rejections {
		key := gw.Namespace + "/" + gw.Name + "/" + strconv.FormatInt(g.generation, 10) + "/" + r.Detail
		if _, seen := w.rejectionsSeen[key]; !seen {
			w.Recorder.Event(gw, corev1.EventTypeWarning, status.EventSnapshotRejected,
				status.SnapshotRejectedMessage(g.scope, r.NodeID, r.Version, r.Generation, r.Detail))
		}
		w.rejectionsSeen[key] = now
	}
}

// forgetRejections drops rejections not seen standing for rejectionMemory.
func (w *Writer) forgetRejections() {
	w.mu.Lock()
	defer w.mu.Unlock()
	cutoff := w.Now().Add(-rejectionMemory)
	for k, seen := range w.rejectionsSeen {
		if seen.Before(cutoff) {
			delete(w.rejectionsSeen, k)
		}
	}
}
