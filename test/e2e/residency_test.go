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

package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// writeResidency writes prefix+".smaps.txt", a copy of the process's
// /proc smaps, and prefix+".resident.txt": for each mapping of its own
// binary, the start of each resident page (one hex address a line,
// after a "# mapping" line). go tool nm and the binary's section table
// turn those addresses into what the process touched of its binary.
func writeResidency(pr *process, prefix string) error {
	if pr == nil || pr.cmd.Process == nil {
		return fmt.Errorf("no process")
	}
	pid := pr.cmd.Process.Pid
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return err
	}
	if err := os.WriteFile(prefix+".smaps.txt", smaps, 0o644); err != nil {
		return err
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return err
	}
	pagemap, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return err
	}
	defer pagemap.Close()
	var out strings.Builder
	page := uint64(os.Getpagesize())
	sc := bufio.NewScanner(strings.NewReader(string(smaps)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// A mapping's line: "start-end perms offset dev inode path".
		if len(f) < 6 || f[5] != exe || !strings.Contains(f[0], "-") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		fmt.Fprintf(&out, "# mapping %s %s %s\n", f[0], f[1], f[2])
		entries := make([]byte, (end-start)/page*8)
		if _, err := pagemap.ReadAt(entries, int64(start/page*8)); err != nil {
			return err
		}
		for i := uint64(0); i < (end-start)/page; i++ {
			// Bit 63 of an entry: the page is present in memory.
			if binary.LittleEndian.Uint64(entries[i*8:])&(1<<63) != 0 {
				fmt.Fprintf(&out, "%x\n", start+i*page)
			}
		}
	}
	return os.WriteFile(prefix+".resident.txt", []byte(out.String()), 0o644)
}
