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
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// pooledPair is a pooledReadConn over the server side of a loopback TCP
// pair, with ahead as the bytes the fast path read before handing it
// over, and the client side.
func pooledPair(t *testing.T, ahead string) (*pooledReadConn, net.Conn) {
	t.Helper()
	server, client := tcpPair(t)
	br := fastReaderPool.Get().(*bufio.Reader)
	br.Reset(strings.NewReader(ahead))
	_, _ = br.Peek(len(ahead))
	pc := &peekedConn{Conn: server, r: br}
	c, ok := newPooledReadConn(pc).(*pooledReadConn)
	if !ok {
		t.Fatal("a TCP connection handed over is not read through a pooled buffer")
	}
	return c, client
}

// TestPooledReadConnOneReadForManyFrames: frames a client sent in one
// packet are read from the socket once, in order after what the fast path
// read ahead, and once read the connection holds no buffer.
func TestPooledReadConnOneReadForManyFrames(t *testing.T) {
	c, client := pooledPair(t, "ahead:")
	var frames bytes.Buffer
	for i := range 20 {
		frames.WriteString("header-9") // nine bytes with the separator
		frames.WriteByte(byte('0' + i%10))
		frames.Write(bytes.Repeat([]byte{byte('a' + i)}, 10+i))
	}
	if _, err := client.Write(frames.Bytes()); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len("ahead:"))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ahead:" {
		t.Fatalf("read %q, %v first; want what was read ahead", got, err)
	}
	time.Sleep(10 * time.Millisecond) // the packet is in the socket
	var read bytes.Buffer
	for i := range 20 {
		head := make([]byte, 9)
		if _, err := io.ReadFull(c, head); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if c.pc.r != nil {
				t.Error("the fast path's reader is still held once its bytes are read")
			}
			if c.buf == nil || c.n != frames.Len() {
				t.Errorf("the first read took %d of the %d bytes there", c.n, frames.Len())
			}
		}
		payload := make([]byte, 10+i)
		if _, err := io.ReadFull(c, payload); err != nil {
			t.Fatal(err)
		}
		read.Write(head)
		read.Write(payload)
	}
	if !bytes.Equal(read.Bytes(), frames.Bytes()) {
		t.Fatal("the frames came out of order")
	}
	if c.buf != nil {
		t.Error("an idle connection holds a buffer")
	}
}

// TestPooledReadConnLargeReads: a read as large as the buffer goes to the
// socket as it is, and a long stream of mixed reads arrives whole.
func TestPooledReadConnLargeReads(t *testing.T) {
	c, client := pooledPair(t, "")
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i * 31)
	}
	go func() {
		_, _ = client.Write(want)
		_ = client.Close()
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got bytes.Buffer
	sizes := []int{9, 100, pooledReadSize, 3, pooledReadSize + 1, 4096}
	for i := 0; ; i++ {
		p := make([]byte, sizes[i%len(sizes)])
		n, err := c.Read(p)
		got.Write(p[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, want %d in order", got.Len(), len(want))
	}
	if c.buf != nil {
		t.Error("a closed connection holds a buffer")
	}
}

// TestPooledReadConnDeadline: a read waits without a buffer and ends at
// the read deadline with a timeout, as a socket's read does.
func TestPooledReadConnDeadline(t *testing.T) {
	c, _ := pooledPair(t, "")
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 9))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	if c.buf != nil {
		t.Error("a read waiting for bytes holds a buffer")
	}
}

// TestPooledReadConnReset: a reset comes back as the socket's error in a
// net.OpError.
func TestPooledReadConnReset(t *testing.T) {
	c, client := pooledPair(t, "")
	_ = client.(*net.TCPConn).SetLinger(0)
	_, _ = client.Write([]byte("x"))
	time.Sleep(10 * time.Millisecond)
	_ = client.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var err error
	for err == nil {
		_, err = c.Read(make([]byte, 9))
	}
	var oe *net.OpError
	var se *os.SyscallError
	if !errors.As(err, &oe) || !errors.As(err, &se) {
		t.Fatalf("read after a reset: %#v, want a net.OpError around the system call's error", err)
	}
}
