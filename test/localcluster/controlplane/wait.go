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

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// waitFor polls ready every 100ms until it holds, the process exits, or the
// timeout passes; errors carry the tail of the process log.
func waitFor(ctx context.Context, p *process.Process, name string, timeout time.Duration, logPath string, ready func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.Done():
			exitErr := p.Err()
			if exitErr == nil { // a clean exit: say so as exec.ExitError would
				exitErr = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited during startup (%w); last log lines:\n%s", name, exitErr, tail(logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s; last log lines:\n%s", name, timeout, tail(logPath, 20))
		case <-t.C:
		}
	}
}

// tail returns the last n lines of a file (read from its last 64 KiB).
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	const window = 64 << 10
	off := st.Size() - window
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, window))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort picks a free TCP port on loopback (0 when none).
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// firstServiceIP is the kubernetes Service's ClusterIP (the range's first
// host address).
func firstServiceIP(cidr string) (net.IP, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() {
		return nil, fmt.Errorf("service CIDR %q: want an IPv4 CIDR", cidr)
	}
	return net.IP(prefix.Masked().Addr().Next().AsSlice()), nil
}
