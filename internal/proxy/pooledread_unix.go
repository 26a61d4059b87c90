//go:build unix

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
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawReader reads a TCP socket through the runtime's poller.
type rawReader struct{ rc syscall.RawConn }

// rawReaderOf is c's socket, or nil when c is not a TCP connection.
func rawReaderOf(c net.Conn) rawReader {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return rawReader{}
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return rawReader{}
	}
	return rawReader{rc: rc}
}

func (r rawReader) ok() bool { return r.rc != nil }

// readPooled waits until the socket has bytes (or its read deadline
// passes) without a buffer, then reads what it has into a pooled one.
func (r rawReader) readPooled() (*[]byte, int, error) {
	var (
		b    *[]byte
		n    int
		rerr error
	)
	err := r.rc.Read(func(fd uintptr) bool {
		buf := pooledReads.Get().(*[]byte)
		for {
			m, err := unix.Read(int(fd), *buf)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				pooledReads.Put(buf)
				return false
			case err != nil:
				rerr = os.NewSyscallError("read", err)
			case m == 0:
				rerr = io.EOF
			default:
				b, n = buf, m
				return true
			}
			pooledReads.Put(buf)
			return true
		}
	})
	if err != nil {
		return nil, 0, err
	}
	return b, n, rerr
}
