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
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// binaryRange is one read-only mapping of the executable file.
type binaryRange struct{ start, end uintptr }

var (
	binaryOnce   sync.Once
	binaryRanges []binaryRange
)

// releaseBinary unmaps the resident pages of the executable's read-only
// mappings (its code, constant data and tables) from the process.
//
// The kernel maps a file's pages in blocks around each page a process
// touches, and a process touches its binary all over while it starts:
// every package's initialization (over 400 in the controller), every
// type a scheme registers. Those pages stay in the process's resident
// set for its life although most are never read again: 29 MB of the
// controller's file-backed resident memory came from initialization
// alone. The pages stay in the page cache, shared; a page read again
// comes back with a minor fault.
//
// Only mappings that hold the file's bytes as they are qualify: not
// writable, and no page of them copied on write (a dynamic linker's
// relocated, then read-only, segment; a debugger's breakpoint), which
// unmapping would revert to the file's. Nothing is done while a tracer
// is attached.
func releaseBinary() {
	binaryOnce.Do(func() { binaryRanges = findBinaryRanges() })
	if len(binaryRanges) == 0 || traced() {
		return
	}
	for _, r := range binaryRanges {
		// Best effort: a range the kernel refuses stays mapped.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED)
	}
}

// findBinaryRanges is the executable's mappings releaseBinary may unmap,
// read from /proc/self/smaps.
func findBinaryRanges() []binaryRange {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil
	}
	return cleanReadOnlyMappings(smaps, exe)
}

// cleanReadOnlyMappings is, of the mappings an smaps file lists, those of
// file path that are not writable and whose Anonymous line says no page
// was copied on write (a mapping without one is left out).
func cleanReadOnlyMappings(smaps []byte, path string) []binaryRange {
	var out []binaryRange
	var cur binaryRange
	candidate := false // cur is path's and read-only; its Anonymous line is to come
	for line := range strings.SplitSeq(string(smaps), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if r, ok := mappingHeader(fields); ok {
			cur = r
			candidate = len(fields) >= 6 && strings.Join(fields[5:], " ") == path && readOnly(fields[1])
			continue
		}
		if candidate && fields[0] == "Anonymous:" {
			if len(fields) >= 2 && fields[1] == "0" {
				out = append(out, cur)
			}
			candidate = false
		}
	}
	return out
}

// mappingHeader parses an smaps line that opens a mapping
// ("start-end perms offset dev inode [path]").
func mappingHeader(fields []string) (binaryRange, bool) {
	if len(fields) < 5 {
		return binaryRange{}, false
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return binaryRange{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return binaryRange{}, false
	}
	return binaryRange{start: uintptr(start), end: uintptr(end)}, true
}

// readOnly reports whether mapping permissions ("r-xp") are readable,
// not writable and private.
func readOnly(perms string) bool {
	return len(perms) == 4 && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p'
}

// traced reports whether a tracer (a debugger) is attached, or the
// process cannot tell.
func traced() bool {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return true
}
