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
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
)

// perHostLayouts are the layouts with a resource per virtual host: the
// Assembler's tests run in each.
var perHostLayouts = []Layout{LayoutVirtualHosts, LayoutVersionBuckets}

// TestBucketedVersionIsItsFormula pins the version of LayoutVersionBuckets
// that proxies and controllers of other releases compute, written out
// from its definition: resources bucketed by the low byte of their key's
// FNV-1a hash, each bucket hashed as LayoutVirtualHosts hashes a whole
// list, and the version the SHA-256 of the 256 digests.
func TestBucketedVersionIsItsFormula(t *testing.T) {
	res, err := ResourcesIn(LayoutVersionBuckets, scaled(3000))
	if err != nil {
		t.Fatal(err)
	}
	buckets := make([][]Resource, 256)
	for _, r := range res { // in key order
		f := fnv.New32a()
		f.Write([]byte(r.Key))
		b := f.Sum32() & 0xff
		buckets[b] = append(buckets[b], r)
	}
	top := sha256.New()
	empty := 0
	for _, members := range buckets {
		h := sha256.New()
		for _, r := range members {
			d := sha256.Sum256(r.Body)
			h.Write([]byte(r.Key))
			h.Write([]byte{0})
			h.Write(d[:])
		}
		if len(members) == 0 {
			empty++
		}
		top.Write(h.Sum(nil))
	}
	if empty > 0 {
		t.Fatalf("%d of 256 buckets empty with %d resources: the test covers too little", empty, len(res))
	}
	want := hex.EncodeToString(top.Sum(nil))
	if got := BucketedResourceVersion(res); got != want {
		t.Fatalf("BucketedResourceVersion = %s, want %s", got, want)
	}
	if got, err := VersionIn(LayoutVersionBuckets, res); err != nil || got != want {
		t.Fatalf("VersionIn = %s (%v), want %s", got, err, want)
	}
	if _, got, err := (&Assembler{Scope: SharedPool(), Layout: LayoutVersionBuckets}).Assemble(res); err != nil || got != want {
		t.Fatalf("Assemble's version = %s (%v), want %s", got, err, want)
	}
	if got := ResourceVersion(res); got == want {
		t.Fatal("the two per-host layouts have the same version: a proxy could not tell which it was sent")
	}
	// No resources: 256 empty buckets.
	top.Reset()
	none := sha256.Sum256(nil)
	for range 256 {
		top.Write(none[:])
	}
	if got, want := BucketedResourceVersion(nil), hex.EncodeToString(top.Sum(nil)); got != want {
		t.Fatalf("the version of nothing = %s, want %s", got, want)
	}
}

// TestApplyHashesOnlyChangedBuckets: in LayoutVersionBuckets a delta
// hashes again only the buckets of the keys it changes; the others, and
// their lists, are the very ones of the version before.
func TestApplyHashesOnlyChangedBuckets(t *testing.T) {
	res, err := ResourcesIn(LayoutVersionBuckets, scaled(2000))
	if err != nil {
		t.Fatal(err)
	}
	a := &Assembler{Scope: SharedPool(), Layout: LayoutVersionBuckets}
	if _, _, err := a.Assemble(res); err != nil {
		t.Fatal(err)
	}
	var set Resource
	for _, r := range res {
		if strings.HasPrefix(r.Key, "endpoints|") {
			set = r
			break
		}
	}
	before := a.buckets
	changed := Resource{Key: set.Key, Body: bytes.Replace(set.Body, []byte(`"port":`), []byte(`"port": `), 1)}
	if bytes.Equal(changed.Body, set.Body) {
		t.Fatal("the endpoint set's body did not change")
	}
	_, v, err := a.Apply([]Resource{changed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := BucketedResourceVersion(upsert(slices.Clone(res), changed)); v != want {
		t.Fatalf("version %s, want %s", v, want)
	}
	b := int(bucketOf(set.Key))
	for i := range versionBucketCount {
		same := bytes.Equal(a.buckets.digest(i), before.digest(i)) && len(a.buckets.members[i]) == len(before.members[i]) &&
			(len(before.members[i]) == 0 || &a.buckets.members[i][0] == &before.members[i][0])
		if same == (i == b) {
			t.Fatalf("bucket %d (the changed key's: %d): kept %v", i, b, same)
		}
	}
}

func TestBucketOfIsFNV1a(t *testing.T) {
	for _, k := range []string{"", "a", "vhost|30000|h00001.example.com", "endpoints|default/svc-0:80", strings.Repeat("x", 300)} {
		f := fnv.New32a()
		f.Write([]byte(k))
		if got, want := bucketOf(k), uint8(f.Sum32()); got != want {
			t.Errorf("bucketOf(%q) = %d, want %d", k, got, want)
		}
	}
}
