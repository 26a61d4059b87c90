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

package discovery_test

import (
	"testing"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestFleetReportsAcksNacksPortsAndSVIDs drives one real mTLS stream and
// reads what the fleet view says of it at each step.
func TestFleetReportsAcksNacksPortsAndSVIDs(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	v1 := snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")
	if err := ts.Publish([]*snapshot.Snapshot{v1}); err != nil {
		t.Fatal(err)
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st.Send(subscribe("proxy-a", shared)); err != nil {
		t.Fatal(err)
	}
	m1 := recvSnapshot(t, st)
	proxies, scopes := ts.Fleet()
	if len(proxies) != 1 || proxies[0].NodeID != "proxy-a" || proxies[0].AckedVersion != "" || proxies[0].InSync {
		t.Fatalf("before the ack: %+v", proxies)
	}
	if proxies[0].SVIDExpiry.IsZero() || proxies[0].Peer == "" || proxies[0].Connected.IsZero() {
		t.Fatalf("peer facts missing: %+v", proxies[0])
	}
	if len(scopes) != 1 || scopes[0].Scope != "shared" || scopes[0].Proxies != 1 || scopes[0].Version != mustVersionIn(t, v1, discovery.RichestLayout) {
		t.Fatalf("scopes: %+v", scopes)
	}
	// A Subscribe without a layout is an older proxy's: it gets the
	// listener layout's version of the same snapshot.
	if m1.GetVersion() != mustVersion(t, v1) || proxies[0].Layout != "listeners" {
		t.Fatalf("an older proxy's stream: version %s, layout %q", m1.GetVersion(), proxies[0].Layout)
	}
	if err := st.Send(ack(m1)); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_NodeStatus{NodeStatus: &discoveryv1.NodeStatus{BoundPorts: []int32{8080}}}}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the ack and the bound port show", func() bool {
		proxies, _ := ts.Fleet()
		return len(proxies) == 1 && proxies[0].InSync && proxies[0].LastAck != nil &&
			len(proxies[0].BoundPorts) == 1 && proxies[0].BoundPorts[0] == 8080 &&
			len(proxies[0].Gateways) == 1 && proxies[0].Gateways[0].Generation == 1
	})

	v2 := snap(shared, "gw", 2, []int32{8080}, "10.0.0.2")
	if err := ts.Publish([]*snapshot.Snapshot{v2}); err != nil {
		t.Fatal(err)
	}
	m2 := recvSnapshot(t, st)
	if err := st.Send(nack(m2, "bind failed")); err != nil {
		t.Fatal(err)
	}
	m3 := recvSnapshot(t, st) // the full resend of v2
	if err := st.Send(nack(m3, "bind failed again")); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the standing NACK shows", func() bool {
		proxies, _ := ts.Fleet()
		return len(proxies) == 1 && !proxies[0].InSync && proxies[0].Rejected != nil &&
			proxies[0].Rejected.Detail == "bind failed again" && proxies[0].Gateways[0].Generation == 1
	})
}
