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
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// testRedis is a real redis-server process on loopback, without
// persistence, for the tests of what counts in Redis.
type testRedis struct {
	bin  string
	port int
	addr string
	cmd  *exec.Cmd
	out  *testkit.SyncBuffer
}

// startRedis starts a redis-server on a free loopback port and stops it
// when the test ends; the test is skipped when redis-server is not
// installed.
func startRedis(t testing.TB) *testRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found (apt-get install redis-server)")
	}
	port := testkit.FreePort(t)
	r := &testRedis{bin: bin, port: port, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	r.start(t)
	t.Cleanup(r.stop)
	return r
}

// start runs the server (again, after stop) on r's port and waits until
// it answers PING.
func (r *testRedis) start(t testing.TB) {
	t.Helper()
	r.out = &testkit.SyncBuffer{}
	r.cmd = exec.Command(r.bin,
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	deadline := time.Now().Add(waitFor)
	for !r.ping() {
		if time.Now().After(deadline) {
			r.stop()
			t.Fatalf("redis-server on %s did not answer PING within %s; output:\n%s", r.addr, waitFor, r.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping reports whether the server answers PING with PONG.
func (r *testRedis) ping() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", r.addr)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.TrimSpace(line) == "+PONG"
}

// stop kills the server and waits for it to exit; stopping a stopped one
// does nothing.
func (r *testRedis) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}
