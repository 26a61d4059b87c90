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

package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

func sample() *Snapshot {
	return &Snapshot{
		Scope: SharedPool(),
		Listeners: []Listener{{
			Name: "gateway/default/web/80", Port: 30000, ExternalPort: 80, Protocol: ProtocolHTTP,
			VirtualHosts: []*VirtualHost{{
				Hostname: "www.example.com",
				Routes: []Route{{
					ID:       "httproute/default/web:0",
					Match:    Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
					Backends: []Backend{{EndpointSet: "default/web:80", Weight: 1}},
					Timeouts: &Timeouts{Request: Duration(1500 * time.Millisecond)},
				}},
			}},
		}},
		EndpointSets: []*EndpointSet{{Name: "default/web:80", Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 8080}}}},
		Gateways:     []GatewayRef{{Namespace: "default", Name: "web", Generation: 3, Ports: []int32{30000}}},
	}
}

func TestRoundTripAndVersion(t *testing.T) {
	s := sample()
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"request":"1.5s"`)) {
		t.Errorf("durations must encode as strings: %s", b)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Encode(got)
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed bytes:\n%s\n%s", b, b2)
	}
	v1, _ := Version(s)
	v2, _ := Version(got)
	if v1 != v2 || len(v1) != 64 {
		t.Fatalf("versions %q %q", v1, v2)
	}
	got.EndpointSets[0].Endpoints[0].Port = 8081
	if v3, _ := Version(got); v3 == v1 {
		t.Fatal("version did not change with content")
	}
}

func TestDecodeYAML(t *testing.T) {
	y := `
scope: {kind: SharedPool}
listeners:
- name: ingress/80
  port: 8080
  protocol: HTTP
  virtualHosts:
  - hostname: "*"
    routes:
    - id: r
      match: {path: {type: Exact, value: /x}}
      directResponse: {statusCode: 500}
`
	s, err := Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if s.Listeners[0].VirtualHosts[0].Routes[0].DirectResponse.StatusCode != 500 {
		t.Fatal("yaml not decoded")
	}
}

func TestResourcesAssemble(t *testing.T) {
	s := sample()
	res, err := Resources(s)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{}
	for _, r := range res {
		keys = append(keys, r.Key)
	}
	want := "endpoints|default/web:80,gateway|default/web,listener|30000"
	if strings.Join(keys, ",") != want {
		t.Fatalf("keys %v, want %s", keys, want)
	}
	// Reverse the order: Assemble must not care.
	for i, j := 0, len(res)-1; i < j; i, j = i+1, j-1 {
		res[i], res[j] = res[j], res[i]
	}
	back, err := Assemble(s.Scope, res)
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := Version(s)
	v2, _ := Version(back)
	if v1 != v2 {
		t.Fatal("Assemble(Resources(s)) differs from s")
	}
	if _, err := Assemble(s.Scope, append(res, Resource{Key: "bogus|x", Body: []byte("{}")})); err == nil {
		t.Fatal("unknown resource kind accepted")
	}
	// A listener whose endpoint set is missing must not assemble.
	var partial []Resource
	for _, r := range res {
		if !strings.HasPrefix(r.Key, "endpoints|") {
			partial = append(partial, r)
		}
	}
	if _, err := Assemble(s.Scope, partial); err == nil || !strings.Contains(err.Error(), "unknown endpoint set") {
		t.Fatalf("dangling endpoint ref: err = %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	tests := map[string]func(s *Snapshot){
		"bad scope":             func(s *Snapshot) { s.Scope.Kind = "Mesh" },
		"gateway scope no name": func(s *Snapshot) { s.Scope = Scope{Kind: ScopeGateway} },
		"port out of range":     func(s *Snapshot) { s.Listeners[0].Port = 70000 },
		"duplicate port":        func(s *Snapshot) { s.Listeners = append(s.Listeners, s.Listeners[0]) },
		"https without certs":   func(s *Snapshot) { s.Listeners[0].Protocol = ProtocolHTTPS },
		"bad hostname":          func(s *Snapshot) { s.Listeners[0].VirtualHosts[0].Hostname = "Bad Host" },
		"null virtual host":     func(s *Snapshot) { s.Listeners[0].VirtualHosts = append(s.Listeners[0].VirtualHosts, nil) },
		"bad regex": func(s *Snapshot) {
			s.Listeners[0].VirtualHosts[0].Routes[0].Match.Path = &PathMatch{Type: PathRegularExpression, Value: "(("}
		},
		"relative path": func(s *Snapshot) {
			s.Listeners[0].VirtualHosts[0].Routes[0].Match.Path = &PathMatch{Type: PathExact, Value: "x"}
		},
		"redirect status": func(s *Snapshot) {
			s.Listeners[0].VirtualHosts[0].Routes[0].Redirect = &Redirect{StatusCode: 200}
		},
		"header injection": func(s *Snapshot) {
			s.Listeners[0].VirtualHosts[0].Routes[0].RequestHeaders = &HeaderModifier{Set: []Header{{Name: "X", Value: "a\r\nB: c"}}}
		},
		"prefix rewrite without prefix match": func(s *Snapshot) {
			r := &s.Listeners[0].VirtualHosts[0].Routes[0]
			r.Match.Path = &PathMatch{Type: PathExact, Value: "/x"}
			r.Rewrite = &URLRewrite{Path: &PathModifier{Type: ReplacePrefixMatch, Value: "/"}}
		},
		"negative weight":    func(s *Snapshot) { s.Listeners[0].VirtualHosts[0].Routes[0].Backends[0].Weight = -1 },
		"endpoint not an IP": func(s *Snapshot) { s.EndpointSets[0].Endpoints[0].Address = "example.com" },
		"mirror unknown set": func(s *Snapshot) { s.Listeners[0].VirtualHosts[0].Routes[0].Mirrors = []Mirror{{EndpointSet: "nope"}} },
		"mirror bad fraction": func(s *Snapshot) {
			s.Listeners[0].VirtualHosts[0].Routes[0].Mirrors = []Mirror{{EndpointSet: "default/web:80", Numerator: 3, Denominator: 2}}
		},
		"duplicate endpoint set": func(s *Snapshot) { s.EndpointSets = append(s.EndpointSets, s.EndpointSets[0]) },
		"null endpoint set":      func(s *Snapshot) { s.EndpointSets = append(s.EndpointSets, nil) },
	}
	if err := Validate(sample()); err != nil {
		t.Fatalf("sample invalid: %v", err)
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			s := sample()
			mutate(s)
			if err := Validate(s); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestValidateFindsEndpointSetsInAnyOrder: backends resolve against the
// endpoint sets whether the list is in order by name (a binary search) or
// not (a map), and in both a missing set and a name listed twice are
// refused.
func TestValidateFindsEndpointSetsInAnyOrder(t *testing.T) {
	build := func(missing string, shuffle bool, dup int) *Snapshot {
		s := sample()
		vh := s.Listeners[0].VirtualHosts[0]
		base := vh.Routes[0]
		s.EndpointSets = nil
		vh.Routes = nil
		for i := range 50 {
			name := fmt.Sprintf("default/svc-%02d:80", 2*i+1) // odd numbers: the even ones are missing
			s.EndpointSets = append(s.EndpointSets, &EndpointSet{Name: name, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 80}}})
			r := base
			r.ID = fmt.Sprintf("httproute/default/r%d:0", i)
			r.Backends = []Backend{{EndpointSet: name, Weight: 1}}
			vh.Routes = append(vh.Routes, r)
		}
		if dup >= 0 {
			s.EndpointSets = slices.Insert(s.EndpointSets, dup+1, s.EndpointSets[dup])
		}
		if missing != "" {
			vh.Routes[7].Backends = append(vh.Routes[7].Backends, Backend{EndpointSet: missing, Weight: 1})
		}
		if shuffle {
			rng := rand.New(rand.NewSource(3))
			rng.Shuffle(len(s.EndpointSets), func(i, j int) { s.EndpointSets[i], s.EndpointSets[j] = s.EndpointSets[j], s.EndpointSets[i] })
		}
		return s
	}
	for _, shuffle := range []bool{false, true} {
		if err := Validate(build("", shuffle, -1)); err != nil {
			t.Fatalf("shuffled %v: %v", shuffle, err)
		}
		for _, missing := range []string{"default/svc-00:80", "default/svc-42:80", "default/svc-98:80", "zzz"} {
			if err := Validate(build(missing, shuffle, -1)); err == nil || !strings.Contains(err.Error(), "unknown endpoint set") {
				t.Errorf("shuffled %v, %s missing: %v", shuffle, missing, err)
			}
		}
		for _, dup := range []int{0, 20, 49} {
			if err := Validate(build("", shuffle, dup)); err == nil || !strings.Contains(err.Error(), "duplicate name") {
				t.Errorf("shuffled %v, set %d twice: %v", shuffle, dup, err)
			}
		}
	}
}

func TestDecodeRejectsUnknownFieldsAndTrailingData(t *testing.T) {
	if _, err := Decode([]byte(`{"scope":{"kind":"SharedPool"},"bogus":1}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
	if _, err := Decode([]byte(`{"scope":{"kind":"SharedPool"}} {}`)); err == nil {
		t.Fatal("trailing document accepted")
	}
	if _, err := Decode([]byte(`{"scope":{"kind":"SharedPool"},"listeners":[{"name":"l","port":80,"protocol":"HTTP","virtualHosts":[{"hostname":"*","routes":[{"id":"r","match":{},"timeouts":{"request":"-1s"}}]}]}]}`)); err == nil {
		t.Fatal("negative duration accepted")
	}
}

// sampleWithNull is the sample's JSON with a null first in its first list
// named field, which Decode must refuse with an error naming it.
func sampleWithNull(t *testing.T, field string) []byte {
	t.Helper()
	b, err := json.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	withNull := bytes.Replace(b, []byte(`"`+field+`":[`), []byte(`"`+field+`":[null,`), 1)
	if bytes.Equal(withNull, b) {
		t.Fatalf("the sample lists no %s", field)
	}
	if _, err := Decode(withNull); err == nil || !strings.Contains(err.Error(), "null") {
		t.Fatalf("Decode: %v, want a null in %s refused", err, field)
	}
	return withNull
}

// TestNullVirtualHostRefused: a wire form or file that lists a virtual
// host as null is refused with an error, never dereferenced.
func TestNullVirtualHostRefused(t *testing.T) {
	withNull := sampleWithNull(t, "virtualHosts")
	var s Snapshot
	if err := json.Unmarshal(withNull, &s); err != nil {
		t.Fatal(err)
	}
	l, err := json.Marshal(s.Listeners[0])
	if err != nil {
		t.Fatal(err)
	}
	res := []Resource{{Key: "listener|" + ListenerKey(&s.Listeners[0]), Body: l}}
	for _, es := range s.EndpointSets {
		body, err := json.Marshal(es)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, Resource{Key: "endpoints|" + es.Name, Body: body})
	}
	if _, err := Assemble(s.Scope, res); err == nil || !strings.Contains(err.Error(), "null") {
		t.Fatalf("Assemble: %v, want a null virtual host refused", err)
	}
}

// TestNullEndpointSetRefused: a wire form or file that lists an endpoint
// set as null is refused with an error, never dereferenced, and so is an
// endpoint set resource whose body is null.
func TestNullEndpointSetRefused(t *testing.T) {
	sampleWithNull(t, "endpointSets")
	nullSets := func(res []Resource, err error) []Resource {
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if strings.HasPrefix(r.Key, "endpoints|") {
				res[i].Body = []byte("null")
			}
		}
		return res
	}
	if _, err := Assemble(sample().Scope, nullSets(Resources(sample()))); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("Assemble: %v, want an endpoint set of body null refused", err)
	}
	res := nullSets(ResourcesIn(LayoutVirtualHosts, sample()))
	a := &Assembler{Scope: sample().Scope, Layout: LayoutVirtualHosts}
	if _, _, err := a.Assemble(res); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("Assembler: %v, want an endpoint set of body null refused", err)
	}
}
