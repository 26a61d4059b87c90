//go:build !linux && !darwin

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

import "net"

// readReply reads one datagram from a session's socket into a pooled
// buffer, held while the read waits (RawConn reads are not portable
// here). The caller puts the buffer back.
func readReply(c *net.UDPConn) (*[]byte, int, error) {
	bp := datagramPool.Get().(*[]byte)
	n, err := c.Read(*bp)
	if err != nil {
		datagramPool.Put(bp)
		return nil, 0, err
	}
	return bp, n, nil
}
