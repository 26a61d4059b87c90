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
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// shuffled returns a copy of res with every top-level slice, and the
// endpoints of every EndpointSlice, permuted by a seeded source.
func shuffled(res *Resources, seed uint64) *Resources {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cp := *res
	v := reflect.ValueOf(&cp).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || f.Len() < 2 {
			continue
		}
		n := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
		reflect.Copy(n, f)
		swap := reflect.Swapper(n.Interface())
		rng.Shuffle(n.Len(), swap)
		f.Set(n)
	}
	for i, s := range cp.EndpointSlices {
		c := s.DeepCopy()
		rng.Shuffle(len(c.Endpoints), func(a, b int) { c.Endpoints[a], c.Endpoints[b] = c.Endpoints[b], c.Endpoints[a] })
		cp.EndpointSlices[i] = c
	}
	return &cp
}

func TestDeterminism(t *testing.T) {
	for _, in := range goldenInputs(t) {
		res := loadGolden(t, in)
		want := encodeResult(t, Translate(res))
		for seed := uint64(1); seed <= 5; seed++ {
			got := encodeResult(t, Translate(shuffled(res, seed)))
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: seed %d: shuffled input changed the result:\n%s", in, seed, testkit.Diff(string(want), string(got)))
			}
		}
	}
}

// TestDeterminismGenerated covers inputs large enough that map iteration
// order would show.
func TestDeterminismGenerated(t *testing.T) {
	res := generate(300, 10, 3)
	want := encodeResult(t, Translate(res))
	for seed := uint64(1); seed <= 3; seed++ {
		if got := encodeResult(t, Translate(shuffled(res, seed))); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: shuffled input changed the result:\n%s", seed, testkit.Diff(string(want), string(got)))
		}
	}
}
