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
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// nameServer accepts connections on loopback and answers each with name.
func nameServer(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name+"\n")
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestForward: connections to a frontend are spliced to its backends round
// robin; a frontend whose Service has no endpoint closes connections; Close
// stops the listeners.
func TestForward(t *testing.T) {
	p := New(nil, nil, t.Logf)
	p.backends = map[string][]string{"tcp/ns/web/http": {nameServer(t, "a"), nameServer(t, "b")}}
	listen := func(key string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		fe := &frontend{ln: ln, key: key}
		p.frontends["tcp/"+ln.Addr().String()] = fe
		go p.serve(fe)
		return ln.Addr().String()
	}
	web, empty := listen("tcp/ns/web/http"), listen("tcp/ns/none/http")
	read := func(addr string) (string, error) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return "", err
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		return bufio.NewReader(c).ReadString('\n')
	}
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		got, err := read(web)
		if err != nil {
			t.Fatal(err)
		}
		seen[got]++
	}
	if seen["a\n"] != 2 || seen["b\n"] != 2 {
		t.Errorf("4 connections reached %v, want 2 each (round robin)", seen)
	}
	if got, err := read(empty); !errors.Is(err, io.EOF) || got != "" {
		t.Errorf("no endpoint: read %q, %v; want the connection closed", got, err)
	}
	p.Close()
	if c, err := net.DialTimeout("tcp", web, time.Second); err == nil {
		_ = c.Close()
		t.Error("the frontend still accepts after Close")
	}
}
