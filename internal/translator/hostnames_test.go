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

package translator

import (
	"reflect"
	"regexp"
	"testing"
)

// snapshotHostnameRE is the snapshot's hostname rule; validHostname must
// never accept a name it rejects.
var snapshotHostnameRE = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func TestValidHostname(t *testing.T) {
	for h, want := range map[string]bool{
		"example.com": true, "*.example.com": true, "a": true, "a-b.c": true, "xn--bcher-kva.example": true,
		"": false, "*": false, "*.": false, "Example.com": false, "-a.com": false, "a-.com": false, "a..com": false,
		"a.com.": false, ".a.com": false, "a.*.com": false, "**.a.com": false, "bad host": false, "a_b.com": false,
		string(make([]byte, 64)) + ".com": false,
	} {
		if got := validHostname(h); got != want {
			t.Errorf("validHostname(%q) = %v, want %v", h, got, want)
		}
		if validHostname(h) && !snapshotHostnameRE.MatchString(h) {
			t.Errorf("validHostname(%q) accepts what the snapshot rejects", h)
		}
	}
}

func TestIntersect(t *testing.T) {
	cases := []struct {
		listener string
		route    []string
		want     []string
	}{
		{"", nil, []string{"*"}},
		{"a.example.com", nil, []string{"a.example.com"}},
		{"", []string{"a.com", "*.b.com"}, []string{"a.com", "*.b.com"}},
		{"*.example.com", []string{"a.example.com", "x.y.example.com", "example.com", "other.org"}, []string{"a.example.com", "x.y.example.com"}},
		{"*.example.com", []string{"*.a.example.com", "*.com"}, []string{"*.a.example.com", "*.example.com"}},
		{"foo.example.com", []string{"*.example.com", "*.foo.example.com"}, []string{"foo.example.com"}},
		{"foo.example.com", []string{"bar.example.com"}, nil},
	}
	for _, c := range cases {
		if got := intersect(c.listener, c.route); !reflect.DeepEqual(got, c.want) {
			t.Errorf("intersect(%q, %v) = %v, want %v", c.listener, c.route, got, c.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "1k": 1024, "10m": 10 << 20, "2G": 2 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1.5m", "-1", "10 m", "1t", "99999999999999999999", "9999999999g"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}
