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
	"regexp"
	"testing"
)

// hostnamePattern is what validHostname accepts.
var hostnamePattern = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// FuzzValidHostname: validHostname agrees with hostnamePattern.
func FuzzValidHostname(f *testing.F) {
	for _, s := range []string{
		"", "*", "*.", "*.a", "**.a", "*.*.a", "a", "a.", ".a", "a..b", "a-b.c", "-a", "a-", "a--b", "A.b", "xn--bcher-kva.example",
		"foo.example.com", "*.example.com", "1.2.3.4", "a_b", "a b", "é.com", "\xff", "a.-b", "a.b-", "0", "*.0-0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validHostname(s), hostnamePattern.MatchString(s); got != want {
			t.Fatalf("validHostname(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
