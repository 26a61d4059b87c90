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

package memrelease

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// TestCleanReadOnlyMappings: of an smaps listing, only the executable's
// read-only private mappings whose Anonymous line says 0 are taken; a
// relocated read-only segment (anonymous pages), writable or shared
// mappings, other files', anonymous ones, a deleted file's and a mapping
// with no Anonymous line are left.
func TestCleanReadOnlyMappings(t *testing.T) {
	const exe = "/opt/my app/coxswain"
	smaps := `00400000-01780000 r-xp 00000000 fd:01 123 /opt/my app/coxswain
Size:              19968 kB
Rss:               12000 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
01780000-02dad000 r--p 01380000 fd:01 123 /opt/my app/coxswain
Size:              22676 kB
Anonymous:             0 kB
02dad000-02db0000 r--p 029ad000 fd:01 123 /opt/my app/coxswain
Size:                 12 kB
Anonymous:             8 kB
02db0000-02e00000 rw-p 029b0000 fd:01 123 /opt/my app/coxswain
Anonymous:            40 kB
02e00000-02e10000 r-xs 00000000 fd:01 123 /opt/my app/coxswain
Anonymous:             0 kB
7f0000000000-7f0000100000 r-xp 00000000 fd:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 00:00 0
Anonymous:           100 kB
7f0000400000-7f0000500000 r--p 00000000 00:00 0 [heap]
Anonymous:             0 kB
7f0000600000-7f0000700000 r--p 00000000 fd:01 123 /opt/my app/coxswain (deleted)
Anonymous:             0 kB
7f0000800000-7f0000900000 r--p 00000000 fd:01 123 /opt/my app/coxswain
Size:               1024 kB
`
	got := cleanReadOnlyMappings([]byte(smaps), exe)
	want := []binaryRange{{0x400000, 0x1780000}, {0x1780000, 0x2dad000}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

// TestReleaseBinaryUnmapsTheExecutablesPages: after releaseBinary the
// executable's read-only mappings hold fewer pages than they did, by at
// least an eighth (counted in /proc/self/pagemap, read in one call a
// mapping, so that little code runs between the release and the count),
// and the code in them runs again with the same result. A test binary
// the internal linker wrote keeps less than half; one an external linker
// wrote (-ldflags=-linkmode=external) kept most of its code's pages on
// this kernel (6.18), its read-only data's going.
func TestReleaseBinaryUnmapsTheExecutablesPages(t *testing.T) {
	if traced() {
		t.Skip("a tracer is attached: releaseBinary does nothing")
	}
	ranges := findBinaryRanges()
	if len(ranges) == 0 {
		t.Fatal("no read-only mapping of the executable found in /proc/self/smaps")
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer func() { _ = pagemap.Close() }()
	page := uintptr(os.Getpagesize())
	largest := uintptr(0)
	for _, r := range ranges {
		largest = max(largest, (r.end-r.start)/page)
	}
	buf := make([]byte, largest*8)
	sum := work()
	before := residentPages(t, pagemap, ranges, buf)
	releaseBinary()
	after := residentPages(t, pagemap, ranges, buf)
	t.Logf("pages of the executable's read-only mappings in memory: %d before, %d after", before, after)
	if after > before-max(8, before/8) {
		t.Fatalf("%d pages mapped after the release, %d before", after, before)
	}
	if again := work(); again != sum {
		t.Fatalf("the code computed %q after the release, %q before", again, sum)
	}
}

// work runs code of three packages and returns what it computed.
func work() string {
	h := sha256.Sum256([]byte("coxswain"))
	re := regexp.MustCompile(`^([a-f0-9]{2})+$`)
	s := hex.EncodeToString(h[:])
	return s + strconv.FormatBool(re.MatchString(s))
}

// residentPages counts the pages of ranges present in the process (bit 63
// of their pagemap entries), buf holding the largest range's entries.
func residentPages(t *testing.T, pagemap *os.File, ranges []binaryRange, buf []byte) int {
	t.Helper()
	page := uintptr(os.Getpagesize())
	n := 0
	for _, r := range ranges {
		entries := buf[:(r.end-r.start)/page*8]
		if _, err := pagemap.ReadAt(entries, int64(r.start/page*8)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(entries); i += 8 {
			if binary.LittleEndian.Uint64(entries[i:])&(1<<63) != 0 {
				n++
			}
		}
	}
	return n
}
