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
	"reflect"
	"regexp"
	"regexp/syntax"
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
// pages of code the test ran before are no longer mapped in the process
// (/proc/self/pagemap), and the code in them runs again, with the same
// result.
func TestReleaseBinaryUnmapsTheExecutablesPages(t *testing.T) {
	if traced() {
		t.Skip("a tracer is attached: releaseBinary does nothing")
	}
	if len(findBinaryRanges()) == 0 {
		t.Fatal("no read-only mapping of the executable found in /proc/self/smaps")
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer func() { _ = pagemap.Close() }()
	// Code only work runs, far from what reading the pagemap runs.
	code := []uintptr{
		reflect.ValueOf(regexp.MustCompile).Pointer(),
		reflect.ValueOf(syntax.Parse).Pointer(),
		reflect.ValueOf(sha256.Sum256).Pointer(),
	}
	sum := work()
	for _, pc := range code {
		if !mapped(t, pagemap, pc) {
			t.Fatalf("the page of %#x is not mapped right after its code ran", pc)
		}
	}
	releaseBinary()
	for _, pc := range code {
		if mapped(t, pagemap, pc) {
			t.Fatalf("the page of %#x is still mapped after releaseBinary", pc)
		}
	}
	if again := work(); again != sum {
		t.Fatalf("the code computed %q after the release, %q before", again, sum)
	}
	if !mapped(t, pagemap, code[0]) {
		t.Fatal("the page of regexp.MustCompile is not mapped again after its code ran")
	}
}

// work runs code of three packages and returns what it computed.
func work() string {
	h := sha256.Sum256([]byte("coxswain"))
	re := regexp.MustCompile(`^([a-f0-9]{2})+$`)
	s := hex.EncodeToString(h[:])
	return s + strconv.FormatBool(re.MatchString(s))
}

// mapped reports whether the page holding address addr is present in
// the process (bit 63 of its pagemap entry).
func mapped(t *testing.T, pagemap *os.File, addr uintptr) bool {
	t.Helper()
	var entry [8]byte
	page := uint64(addr) / uint64(os.Getpagesize())
	if _, err := pagemap.ReadAt(entry[:], int64(page*8)); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(entry[:])&(1<<63) != 0
}
