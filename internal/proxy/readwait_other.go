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

// readWaiter has nothing to hold where connections cannot be polled
// without a read.
type readWaiter struct{}

func (s *fastSource) init(nc net.Conn) { s.nc = nc }

// awaitReadable waits until the connection has a byte to read, by reading
// it (the next Read returns it first): nil when it came, else why not.
func (s *fastSource) awaitReadable() error {
	if s.has {
		return nil
	}
	return s.readOne()
}
