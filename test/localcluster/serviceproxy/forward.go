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

package serviceproxy

import (
	"errors"
	"io"
	"net"
	"time"
)

// pick returns a ready backend of key, round robin.
func (p *Proxy) pick(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.backends[key]
	if len(b) == 0 {
		return "", false
	}
	return b[int(p.rr.Add(1)%uint64(len(b)))], true
}

// serve accepts connections until the listener is closed.
func (p *Proxy) serve(fe *frontend) {
	for {
		conn, err := fe.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		key := fe.key
		p.mu.Unlock()
		go p.forward(conn, key)
	}
}

// forward splices a client connection to a backend.
func (p *Proxy) forward(client net.Conn, key string) {
	defer func() { _ = client.Close() }()
	addr, ok := p.pick(key)
	if !ok {
		return // no ready endpoint: refuse by closing
	}
	backend, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = backend.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-done
	<-done
}
