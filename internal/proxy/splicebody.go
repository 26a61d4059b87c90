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
)

// spliceMin is the shortest response body relayed in the kernel: below
// it the pipe's extra system calls cost about what the copy saves.
const spliceMin = 64 << 10

// spliceBody relays a response body in the kernel when nothing on the
// way reads it: a Content-Length body from a plain (not TLS) upstream
// connection of the lean client, answered on the fast path's plain
// connection with the same Content-Length and no filter writing the
// body. net.TCPConn.ReadFrom moves it with splice(2) on Linux (through a
// pipe, never through the proxy's memory) and copies elsewhere. The
// bytes the upstream's reader had buffered go first, through the
// client's writer.
//
// It moves what it can and leaves the rest, if any, to copyBody's loop,
// which then reads the body to its end (pooling the upstream connection
// unless the upstream sent more than the body, or closed) as for any
// body. An error is the relay's: the body is cut short.
func spliceBody(ex *exchange, body io.Reader) error {
	fw, ok := ex.w.(*fastWriter)
	if !ok || !fw.wroteHeader || fw.chunked || fw.noBody || fw.err != nil {
		return nil
	}
	dst, ok := fw.conn.(*net.TCPConn)
	if !ok {
		return nil
	}
	hb, ok := body.(*h1Body)
	if !ok || hb.done {
		return nil
	}
	st, ok := hb.rc.(*stopper)
	if !ok {
		return nil
	}
	lb, ok := st.ReadCloser.(*lengthBody)
	if !ok || lb.left < spliceMin || lb.left != fw.remaining || lb.br != hb.pc.br {
		return nil
	}
	src, ok := hb.pc.nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	// The part of the body the upstream's reader holds goes through the
	// client's writer after the head, and both out before the splice.
	if n := min(lb.br.Buffered(), int(lb.left)); n > 0 {
		b, _ := lb.br.Peek(n)
		if _, err := ex.Write(b); err != nil {
			return err
		}
		_, _ = lb.br.Discard(n)
		lb.left -= int64(n)
	}
	if err := fw.bw.Flush(); err != nil {
		fw.err = err
		return err
	}
	if lb.left == 0 || lb.br.Buffered() > 0 {
		return nil
	}
	lr := &io.LimitedReader{R: src, N: lb.left}
	n, err := dst.ReadFrom(lr)
	lb.left -= n
	fw.remaining -= n
	ex.bytes += n
	hb.c.spliced.Add(n)
	if err == nil && lb.left > 0 {
		err = io.ErrUnexpectedEOF // the upstream closed within the body
	}
	if err != nil {
		fw.err = err
		hb.finish(false)
		return err
	}
	// Bytes after the body are no answer to anything: with the copy they
	// would sit in the reader and keep the connection out of the pool;
	// here they are still in the socket.
	if peerClosed(src) {
		hb.keep = false
	}
	return nil
}
