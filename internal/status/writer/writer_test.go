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
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// The suite's envtest control plane: a real kube-apiserver with the
// Gateway API CRDs, started before the tests and shared by every test (each
// uses its own namespace).
var (
	api     testkit.Envtest
	kube    client.Client
	clients *kubernetes.Clientset
	restCfg *rest.Config
	scheme  = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	os.Exit(api.RunStarted(m, func(cfg *rest.Config) (err error) {
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := gwv1.Install(scheme); err != nil {
			return err
		}
		if err := gatewayv1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		if err := ingressv1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		restCfg = cfg
		if kube, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			return err
		}
		clients, err = kubernetes.NewForConfig(cfg)
		return err
	}))
}

// scriptedDataPlane answers the writer with whatever the test set for a
// generation: the seam where the discovery server plugs in.
type scriptedDataPlane struct {
	mu    sync.Mutex
	byGen map[int64]writer.GatewayDataPlane
}

func (s *scriptedDataPlane) Gateway(_, _ string, generation int64) writer.GatewayDataPlane {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byGen[generation]
}

func (s *scriptedDataPlane) set(generation int64, dp writer.GatewayDataPlane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byGen == nil {
		s.byGen = map[int64]writer.GatewayDataPlane{}
	}
	s.byGen[generation] = dp
}

// countingRecorder counts the Events the writer raises, by reason, and
// passes them on to the apiserver.
type countingRecorder struct {
	record.EventRecorder
	mu sync.Mutex
	n  map[string]int
}

func (c *countingRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	c.mu.Lock()
	c.n[reason]++
	c.mu.Unlock()
	c.EventRecorder.Event(obj, eventtype, reason, message)
}

func (c *countingRecorder) count(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[reason]
}

// fixture is one namespace with one Gateway and a writer gated on a
// scripted data plane, recording Events to the apiserver.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	key      types.NamespacedName
	dp       *scriptedDataPlane
	recorder *countingRecorder
	w        *writer.Writer
	res      *translator.Result // the last one write made
}

func newFixture(t *testing.T, ns string) *fixture {
	t.Helper()
	ctx := t.Context()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	gw := &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: "coxswain",
			Listeners:        []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}},
		},
	}
	if err := kube.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clients.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	rec := &countingRecorder{
		EventRecorder: broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "coxswain-controller"}),
		n:             map[string]int{},
	}
	dp := &scriptedDataPlane{}
	return &fixture{
		t: t, ctx: ctx, key: client.ObjectKeyFromObject(gw), dp: dp, recorder: rec,
		w: &writer.Writer{Client: kube, Recorder: rec, DataPlane: dp},
	}
}

func (f *fixture) gateway() *gwv1.Gateway {
	f.t.Helper()
	gw := &gwv1.Gateway{}
	if err := kube.Get(f.ctx, f.key, gw); err != nil {
		f.t.Fatal(err)
	}
	return gw
}

// write runs one writer round with the translator's desired status for the
// Gateway's current generation: Accepted, and Programmed=True as far as the
// published snapshot goes.
func (f *fixture) write() *gwv1.Gateway {
	f.t.Helper()
	gen := f.gateway().Generation
	if f.res != nil && f.res.Gateways[0].Generation == gen {
		// The same Result again, as the rounds a proxy's ack starts get
		// it: only the data plane changed.
		if err := f.w.Write(f.ctx, f.res); err != nil {
			f.t.Fatal(err)
		}
		return f.gateway()
	}
	snapshotOnly := status.Programmed(true, status.ReasonProgrammed, "Gateway is in the published snapshot", gen)
	res := &translator.Result{Gateways: []translator.GatewayStatus{{GatewayState: &translator.GatewayState{
		NamespacedName: f.key,
		Generation:     gen,
		Scope:          snapshot.SharedPool(),
		Status: gwv1.GatewayStatus{
			Conditions: []metav1.Condition{status.Accepted(true, status.ReasonAccepted, "Gateway is accepted", gen), snapshotOnly},
			Listeners: []gwv1.ListenerStatus{{
				Name:           "http",
				SupportedKinds: []gwv1.RouteGroupKind{{Kind: "HTTPRoute"}},
				Conditions: []metav1.Condition{
					status.Accepted(true, status.ReasonAccepted, "listener is accepted", gen),
					status.Programmed(true, status.ReasonProgrammed, "listener is in the published snapshot", gen),
				},
			}},
		},
	}}}}
	f.res = res
	if err := f.w.Write(f.ctx, res); err != nil {
		f.t.Fatal(err)
	}
	return f.gateway()
}

// programmed renders the Gateway's and its listener's Programmed
// conditions; they must agree.
func (f *fixture) programmed(gw *gwv1.Gateway) string {
	f.t.Helper()
	c := meta.FindStatusCondition(gw.Status.Conditions, status.TypeProgrammed)
	if c == nil || len(gw.Status.Listeners) != 1 {
		f.t.Fatalf("no Programmed condition or listener status: %+v", gw.Status)
	}
	l := meta.FindStatusCondition(gw.Status.Listeners[0].Conditions, status.TypeProgrammed)
	if l == nil || l.Status != c.Status || l.Reason != c.Reason || l.Message != c.Message {
		f.t.Fatalf("the listener's Programmed %+v differs from the Gateway's %+v", l, c)
	}
	return fmt.Sprintf("%s/%s gen %d: %s", c.Status, c.Reason, c.ObservedGeneration, c.Message)
}

func shared(proxies, ready int, rejections ...writer.Rejection) writer.GatewayDataPlane {
	return writer.GatewayDataPlane{Published: true, Scope: "shared", Proxies: proxies, Ready: ready, Rejections: rejections}
}

func expect(t *testing.T, step, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n got: %s\nwant: %s", step, got, want)
	}
}

// Programmed turns True only once every proxy acked, says so with the
// counts, and then holds through proxy churn for the same generation
// without a write.
func TestProgrammedLatchHoldsThroughProxyChurn(t *testing.T) {
	f := newFixture(t, "latch")
	f.dp.set(1, writer.GatewayDataPlane{Scope: "shared"})
	expect(t, "before publish", f.programmed(f.write()),
		"False/Pending gen 1: Waiting for the data plane: no published snapshot of scope shared holds this Gateway yet")
	f.dp.set(1, shared(0, 0))
	expect(t, "no proxy", f.programmed(f.write()),
		"False/Pending gen 1: Waiting for the data plane: no proxy of scope shared is connected")
	f.dp.set(1, shared(2, 1))
	expect(t, "one of two acked", f.programmed(f.write()),
		"False/Pending gen 1: Waiting for 1 of 2 proxies of scope shared to bind this Gateway's ports and ack its generation 1")
	f.dp.set(1, shared(2, 2))
	acked := f.write()
	const ackedTwo = "True/Programmed gen 1: 2 of 2 proxies of scope shared bound this Gateway's ports and acked its generation 1"
	expect(t, "both acked", f.programmed(acked), ackedTwo)
	since := meta.FindStatusCondition(acked.Status.Conditions, status.TypeProgrammed).LastTransitionTime

	for _, churn := range []struct {
		name string
		dp   writer.GatewayDataPlane
	}{
		{"a third proxy connects", shared(3, 2)},
		{"two proxies restart", shared(3, 0)},
		{"every proxy is gone", shared(0, 0)},
		{"the snapshot is being republished", writer.GatewayDataPlane{Scope: "shared"}},
	} {
		f.dp.set(1, churn.dp)
		gw := f.write()
		expect(t, churn.name, f.programmed(gw), ackedTwo)
		if gw.ResourceVersion != acked.ResourceVersion {
			t.Fatalf("%s: the latched status was patched (resourceVersion %s → %s)", churn.name, acked.ResourceVersion, gw.ResourceVersion)
		}
	}
	f.dp.set(1, shared(3, 3))
	gw := f.write()
	expect(t, "all three acked", f.programmed(gw),
		"True/Programmed gen 1: 3 of 3 proxies of scope shared bound this Gateway's ports and acked its generation 1")
	if got := meta.FindStatusCondition(gw.Status.Conditions, status.TypeProgrammed).LastTransitionTime; !got.Equal(&since) {
		t.Fatalf("Programmed stayed True, but its lastTransitionTime moved from %v to %v", since, got)
	}
}

// A spec change is a new generation: Programmed is Pending again until the
// proxies ack that generation, even though they still serve the old one.
func TestProgrammedRearmsOnSpecChange(t *testing.T) {
	f := newFixture(t, "rearm")
	f.dp.set(1, shared(2, 2))
	expect(t, "generation 1 acked", f.programmed(f.write()),
		"True/Programmed gen 1: 2 of 2 proxies of scope shared bound this Gateway's ports and acked its generation 1")

	gw := f.gateway()
	gw.Spec.Listeners[0].Port = 8080
	if err := kube.Update(f.ctx, gw); err != nil {
		t.Fatal(err)
	}
	if gw.Generation != 2 {
		t.Fatalf("a spec change makes generation 2, got %d", gw.Generation)
	}
	f.dp.set(2, shared(2, 0))
	expect(t, "generation 2 published", f.programmed(f.write()),
		"False/Pending gen 2: Waiting for 2 of 2 proxies of scope shared to bind this Gateway's ports and ack its generation 2")
	f.dp.set(2, shared(2, 1))
	expect(t, "one proxy acked generation 2", f.programmed(f.write()),
		"False/Pending gen 2: Waiting for 1 of 2 proxies of scope shared to bind this Gateway's ports and ack its generation 2")
	f.dp.set(2, shared(2, 2))
	expect(t, "generation 2 acked", f.programmed(f.write()),
		"True/Programmed gen 2: 2 of 2 proxies of scope shared bound this Gateway's ports and acked its generation 2")
}

// A NACK of the current generation breaks the latch: Programmed False with
// the proxy's reason, and one Warning Event per distinct refusal however
// many proxies and rounds repeat it.
func TestSnapshotRejectedBreaksLatchAndRaisesOneEvent(t *testing.T) {
	f := newFixture(t, "nack")
	f.dp.set(1, shared(3, 3))
	expect(t, "acked", f.programmed(f.write()),
		"True/Programmed gen 1: 3 of 3 proxies of scope shared bound this Gateway's ports and acked its generation 1")

	denied := "listen tcp :80: bind: permission denied"
	refusal := func(node string) writer.Rejection {
		return writer.Rejection{NodeID: node, Version: "v-7f3a", Generation: 1, Detail: denied}
	}
	// The proxies keep serving the older snapshot (Ready stays 3), but
	// they refused the newest one holding this generation.
	f.dp.set(1, shared(3, 3, refusal("proxy-a")))
	expect(t, "one proxy refused", f.programmed(f.write()),
		"False/SnapshotRejected gen 1: 1 of 3 proxies of scope shared rejected the snapshot holding generation 1; proxy proxy-a said: "+denied)
	// A NACK storm: every proxy refuses, round after round.
	f.dp.set(1, shared(3, 3, refusal("proxy-a"), refusal("proxy-b"), refusal("proxy-c")))
	var gw *gwv1.Gateway
	for range 50 {
		gw = f.write()
	}
	expect(t, "every proxy refused", f.programmed(gw),
		"False/SnapshotRejected gen 1: 3 of 3 proxies of scope shared rejected the snapshot holding generation 1; proxy proxy-a said: "+denied)
	if n := f.recorder.count(status.EventSnapshotRejected); n != 1 {
		t.Fatalf("one refusal, repeated by 3 proxies over 51 rounds: %d SnapshotRejected Events, want 1", n)
	}
	wantMsg := "proxy proxy-a of scope shared rejected snapshot v-7f3a holding generation 1: " + denied
	ev := f.waitForEvent(status.EventSnapshotRejected)
	if ev.Type != corev1.EventTypeWarning || ev.Message != wantMsg || ev.InvolvedObject.Kind != "Gateway" || ev.InvolvedObject.Name != "web" {
		t.Fatalf("Event %s %s on %s %s: %q, want a Warning on Gateway web: %q", ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message, wantMsg)
	}
	// A different refusal is news.
	other := writer.Rejection{NodeID: "proxy-d", Version: "v-7f3a", Generation: 1, Detail: "unknown listener protocol"}
	f.dp.set(1, shared(4, 3, refusal("proxy-a"), other))
	f.write()
	if n := f.recorder.count(status.EventSnapshotRejected); n != 2 {
		t.Fatalf("a second, different refusal: %d SnapshotRejected Events, want 2", n)
	}
	// Once every proxy acks, Programmed is True again.
	f.dp.set(1, shared(4, 4))
	expect(t, "refusals cleared", f.programmed(f.write()),
		"True/Programmed gen 1: 4 of 4 proxies of scope shared bound this Gateway's ports and acked its generation 1")
}

// waitForEvent waits for the fixture's Gateway's Event of reason to reach
// the apiserver (the broadcaster sends asynchronously).
func (f *fixture) waitForEvent(reason string) corev1.Event {
	f.t.Helper()
	var found []corev1.Event
	testkit.EventuallyExplained(f.t, 30*time.Second, func() string {
		list := &corev1.EventList{}
		if err := kube.List(f.ctx, list, client.InNamespace(f.key.Namespace)); err != nil {
			f.t.Fatal(err)
		}
		found = nil
		for _, e := range list.Items {
			if e.Reason == reason && e.InvolvedObject.Name == f.key.Name {
				found = append(found, e)
			}
		}
		if len(found) == 0 {
			return fmt.Sprintf("no %s Event on Gateway %s", reason, f.key)
		}
		return ""
	})
	if len(found) > 1 || found[0].Count > 1 {
		var msgs []string
		for _, e := range found {
			msgs = append(msgs, fmt.Sprintf("%dx %s", e.Count, e.Message))
		}
		f.t.Fatalf("expected one %s Event, got %s", reason, strings.Join(msgs, "; "))
	}
	return found[0]
}

// TestStatusPatchTakesTheNewResourceVersion: a status patch writes the
// status and leaves the object at the resourceVersion the apiserver gave
// it (the writer reads nothing else of the answer, which is metadata
// only); a patch from a stale object is refused with a conflict.
func TestStatusPatchTakesTheNewResourceVersion(t *testing.T) {
	f := newFixture(t, "status-patch")
	w := &writer.Writer{Client: kube}
	orig := f.gateway()
	obj := orig.DeepCopy()
	obj.Status.Conditions = []metav1.Condition{status.Accepted(true, status.ReasonAccepted, "patched", orig.Generation)}
	obj.Status.Conditions[0].LastTransitionTime = metav1.Now()
	if err := writer.PatchStatus(f.ctx, w, obj, orig); err != nil {
		t.Fatal(err)
	}
	got := f.gateway()
	if obj.ResourceVersion == orig.ResourceVersion || obj.ResourceVersion != got.ResourceVersion {
		t.Errorf("resourceVersion after the patch %q, before %q, the apiserver's %q", obj.ResourceVersion, orig.ResourceVersion, got.ResourceVersion)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Message != "patched" {
		t.Errorf("status after the patch: %+v", got.Status.Conditions)
	}
	if len(obj.Spec.Listeners) != 1 || obj.Status.Conditions[0].Message != "patched" {
		t.Errorf("the patch changed the object beyond its resourceVersion: %+v", obj)
	}

	stale := orig.DeepCopy()
	stale.Status.Conditions = []metav1.Condition{status.Accepted(false, status.ReasonInvalid, "stale", orig.Generation)}
	stale.Status.Conditions[0].LastTransitionTime = metav1.Now()
	if err := writer.PatchStatus(f.ctx, w, stale, orig); !apierrors.IsConflict(err) {
		t.Errorf("a patch from a stale object: %v, want a conflict", err)
	}
	if got := f.gateway(); got.Status.Conditions[0].Message != "patched" {
		t.Errorf("a refused patch changed the status: %+v", got.Status.Conditions)
	}
}
