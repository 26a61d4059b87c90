//go:build linux || darwin

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

package proxy

import (
	"net"

	"golang.org/x/sys/unix"
)

// readReply reads one datagram from a session's socket into a pooled
// buffer, taken only once the datagram is there: it waits for
// readability without one (syscall.RawConn.Read), honouring the read
// deadline. The caller puts the buffer back.
func readReply(c *net.UDPConn) (*[]byte, int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var bp *[]byte
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		bp = datagramPool.Get().(*[]byte)
		for {
			n, rerr = unix.Read(int(fd), *bp)
			if rerr != unix.EINTR {
				break
			}
		}
		if rerr == unix.EAGAIN || rerr == unix.EWOULDBLOCK {
			datagramPool.Put(bp)
			bp = nil
			return false // not there yet: wait for readability
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		if bp != nil {
			datagramPool.Put(bp)
		}
		return nil, 0, err
	}
	return bp, n, nil
}
