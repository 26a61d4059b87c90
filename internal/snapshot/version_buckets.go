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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The version of LayoutVersionBuckets. LayoutVirtualHosts hashes every
// resource in key order, so a change near the front of the list (an
// endpoint set: "endpoints|" keys sort before "vhost|" ones) makes the
// controller and every proxy hash every later resource again: at 10,000
// virtual hosts, most of what an endpoint refresh cost either side. Here
// the resources fall into versionBucketCount buckets by a hash of their
// key; a bucket's digest is the LayoutVirtualHosts hash of its resources
// alone, and the version is the SHA-256 of the buckets' digests in bucket
// order. A change hashes its buckets again (some dozens of resources at
// 10,000) and the digests (8 KiB), whatever the number of resources.

// versionBucketCount is how many buckets the version hashes.
const versionBucketCount = 256

// bucketOf is the bucket of the resource with key: the low byte of the
// key's 32-bit FNV-1a hash (hash/fnv's New32a, without an allocation).
func bucketOf(key string) uint8 {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return uint8(h) //nolint:gosec // G115: the low byte is the bucket, by definition
}

// versionBuckets is the state of a LayoutVersionBuckets version: each
// bucket's resources in key order and its digest. It is never modified
// once made (a copy of its Assembler shares it): a change makes another,
// which shares the lists of the buckets it leaves alone.
type versionBuckets struct {
	members [versionBucketCount][]keptResource
	// digests are the buckets' digests, one after the other: what the
	// version hashes.
	digests [versionBucketCount * sha256.Size]byte
}

// digest is the digest of bucket b.
func (vb *versionBuckets) digest(b int) []byte {
	return vb.digests[b*sha256.Size : (b+1)*sha256.Size]
}

// newVersionBuckets is the buckets of list, which is in key order.
func newVersionBuckets(list []keptResource) *versionBuckets {
	of := make([]uint8, len(list))
	var start [versionBucketCount + 1]int
	for i := range list {
		of[i] = bucketOf(list[i].key)
		start[int(of[i])+1]++
	}
	for b := 1; b <= versionBucketCount; b++ {
		start[b] += start[b-1]
	}
	all := make([]keptResource, len(list))
	at := start
	for i := range list {
		all[at[of[i]]] = list[i]
		at[of[i]]++
	}
	vb := new(versionBuckets)
	h := newDigestBuffer()
	for b := range versionBucketCount {
		vb.members[b] = all[start[b]:start[b+1]:start[b+1]]
		h.bucketDigest(vb.members[b], vb.digest(b))
	}
	return vb
}

// with is vb with changes made, in key order: each sets the resource of
// its key (d nil: removes it).
func (vb *versionBuckets) with(changes []keptResource) *versionBuckets {
	if len(changes) == 0 {
		return vb
	}
	var byBucket [versionBucketCount][]keptResource
	var dirty []uint8
	for _, c := range changes {
		b := bucketOf(c.key)
		if byBucket[b] == nil {
			dirty = append(dirty, b)
		}
		byBucket[b] = append(byBucket[b], c)
	}
	out := new(versionBuckets)
	*out = *vb
	// A bucket is some dozens of resources: a small buffer (the 16 KiB
	// of a whole list's was most of what a change allocated here).
	h := newDigestBufferOf(2 << 10)
	for _, b := range dirty {
		out.members[b] = mergeMembers(vb.members[b], byBucket[b])
		h.bucketDigest(out.members[b], out.digest(int(b)))
	}
	return out
}

// mergeMembers is a new list of members (in key order) with changes (in
// key order) made.
func mergeMembers(members, changes []keptResource) []keptResource {
	out := make([]keptResource, 0, len(members)+len(changes))
	for len(members) > 0 || len(changes) > 0 {
		switch {
		case len(changes) == 0 || (len(members) > 0 && members[0].key < changes[0].key):
			out, members = append(out, members[0]), members[1:]
		default:
			c := changes[0]
			if len(members) > 0 && members[0].key == c.key {
				members = members[1:]
			}
			if c.d != nil {
				out = append(out, c)
			}
			changes = changes[1:]
		}
	}
	return out
}

// version is the hex version.
func (vb *versionBuckets) version() string {
	sum := sha256.Sum256(vb.digests[:])
	return hex.EncodeToString(sum[:])
}

// bucketDigest sets dst to the digest of one bucket's members: the
// LayoutVirtualHosts hash of them alone.
func (b *digestBuffer) bucketDigest(members []keptResource, dst []byte) {
	b.h.Reset()
	b.buf = b.buf[:0]
	for i := range members {
		b.add(members[i].key, &members[i].d.digest)
	}
	b.h.Write(b.buf)
	b.buf = b.buf[:0]
	b.h.Sum(dst[:0]) // dst has room for it: Sum writes in place
}

// BucketedResourceVersion is the version of a resource set in
// LayoutVersionBuckets: the hex SHA-256 of the digests of its 256 buckets
// in bucket order, where a resource's bucket is the low byte of the 32-bit
// FNV-1a hash of its key, and a bucket's digest is the SHA-256 over each
// of its keys, in order, followed by a zero byte and the SHA-256 of its
// body (an empty bucket's: the SHA-256 of nothing). Equal sets have equal
// versions however they were built.
func BucketedResourceVersion(resources []Resource) string {
	sorted := sortedByKey(resources)
	list := make([]keptResource, len(sorted))
	for i, r := range sorted {
		list[i] = keptResource{key: r.Key, d: &decodedResource{digest: sha256.Sum256(r.Body)}}
	}
	return newVersionBuckets(list).version()
}

// VersionIn is the version of resources (one per key) in layout, which
// cuts a snapshot into a resource per virtual host: what Assemble would
// return with them, without decoding them.
func VersionIn(layout Layout, resources []Resource) (string, error) {
	switch layout {
	case LayoutVirtualHosts:
		return ResourceVersion(resources), nil
	case LayoutVersionBuckets:
		return BucketedResourceVersion(resources), nil
	}
	return "", fmt.Errorf("the %s layout's version needs the snapshot", layout)
}
