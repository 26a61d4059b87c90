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

package testkit

import (
	"strings"
	"testing"
)

func TestDiffNamesTheFirstDifference(t *testing.T) {
	d := Diff("a\nb\nc\nd\n", "a\nb\nX\nd\n")
	for _, want := range []string{"- c", "+ X", "  b", "first difference at line 3"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
}

func TestFreeAddrIsLoopback(t *testing.T) {
	if a := FreeAddr(t); !strings.HasPrefix(a, "127.0.0.1:") || a == "127.0.0.1:0" {
		t.Errorf("FreeAddr = %q", a)
	}
}
