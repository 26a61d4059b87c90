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

// Command idleconns is the load tool of bench/idle.sh: it measures what an
// idle client connection costs a proxy in resident memory.
//
//	idleconns -addr 127.0.0.1:P -pid PID -n 10000 -proto h1|h1tls|h2c
//
// It first opens -warmup connections, sends one request on each and
// closes them (so pools and caches the proxy fills on first use are
// counted in the baseline, not in the connections), then reads the
// anonymous part of the proxy's resident set (RssAnon in
// /proc/PID/status: heap, stacks, what connections hold; not the pages
// of its binary, which Coxswain's proxy unmaps once quiet, perhaps
// between two readings), opens -n connections, sends ONE request on each
// and reads its whole answer (as a browser would, so the connection has
// been used), and leaves them idle. After -settle it reads RssAnon again,
// -samples times, -settle apart, and prints one line of key=value
// figures:
//
//	conns=10000 failed=0 anon_before_kib=... anon_after_kib=...,... kib_per_conn=...,...
//
// -proto h1 sends an HTTP/1.1 keep-alive GET; -proto h1tls does the same
// over TLS (ALPN http/1.1, the certificate not checked); -proto h2c speaks HTTP/2
// with prior knowledge (the client preface, SETTINGS, one GET on stream 1
// with END_STREAM) and reads the answer to its END_STREAM. Connections are
// opened by -workers at a time, so the proxy never needs more than about
// that many upstream connections. It exits non-zero when any connection
// failed (the figures would not be per connection).
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func main() {
	addr := flag.String("addr", "", "proxy address host:port")
	host := flag.String("host", "idle.bench.local", "Host (:authority) of the requests")
	pid := flag.Int("pid", 0, "process whose anonymous resident memory (RssAnon) is measured")
	n := flag.Int("n", 10000, "idle connections to open")
	proto := flag.String("proto", "h1", "h1 (HTTP/1.1 keep-alive), h1tls (the same over TLS) or h2c (HTTP/2, prior knowledge)")
	workers := flag.Int("workers", 16, "connections opened concurrently")
	warmup := flag.Int("warmup", 200, "connections opened, used once and closed before the baseline")
	settle := flag.Duration("settle", 5*time.Second, "wait before each RSS sample")
	samples := flag.Int("samples", 2, "RSS samples after the connections are idle")
	timeout := flag.Duration("timeout", 10*time.Second, "deadline of each connection's dial and exchange")
	pprofURL := flag.String("pprof", "", "after the last sample, save the heap and goroutine profiles of this /debug/pprof URL")
	pprofOut := flag.String("pprof-out", "idle", "file name prefix of the saved profiles")
	flag.Parse()
	if *addr == "" || *pid == 0 {
		fmt.Fprintln(os.Stderr, "idleconns: -addr and -pid are required")
		os.Exit(2)
	}
	var use func(net.Conn, *bufio.Reader, string) error
	var tlsConfig *tls.Config
	switch *proto {
	case "h1":
		use = useH1
	case "h1tls":
		use = useH1
		tlsConfig = &tls.Config{ServerName: *host, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} // the benchmark's own loopback proxy
	case "h2c":
		use = useH2C
	default:
		fmt.Fprintf(os.Stderr, "idleconns: -proto %q: want h1, h1tls or h2c\n", *proto)
		os.Exit(2)
	}
	o := opener{addr: *addr, host: *host, use: use, tls: tlsConfig, workers: *workers, timeout: *timeout}

	warm, werr := o.open(*warmup)
	for _, c := range warm {
		_ = c.Close()
	}
	if werr != nil {
		fail("warm-up: %v", werr)
	}
	time.Sleep(time.Second)

	before, err := anonRSS(*pid)
	if err != nil {
		fail("%v", err)
	}
	start := time.Now()
	conns, err := o.open(*n)
	opened := time.Since(start)
	if err != nil {
		fail("%d of %d connections failed (%v)", *n-len(conns), *n, err)
	}
	var after, per []string
	for range *samples {
		time.Sleep(*settle)
		if err := alive(*pid); err != nil {
			fail("%v", err)
		}
		rss, err := anonRSS(*pid)
		if err != nil {
			fail("%v", err)
		}
		after = append(after, strconv.Itoa(rss))
		per = append(per, fmt.Sprintf("%.2f", float64(rss-before)/float64(len(conns))))
	}
	gcNote := ""
	if *pprofURL != "" {
		if err := saveProfiles(*pprofURL, *pprofOut); err != nil {
			fail("profiles: %v", err)
		}
		rss, err := anonRSS(*pid)
		if err != nil {
			fail("%v", err)
		}
		gcNote = fmt.Sprintf(" anon_after_forced_gc_kib=%d", rss)
	}
	// Every connection must still be open: one the proxy closed would not
	// be holding its memory any more.
	closed := 0
	for _, c := range conns {
		if peerClosed(c) {
			closed++
		}
		_ = c.Close()
	}
	fmt.Printf("conns=%d failed=0 closed_by_proxy=%d open_seconds=%.2f anon_before_kib=%d anon_after_kib=%s kib_per_conn=%s%s\n",
		len(conns), closed, opened.Seconds(), before, strings.Join(after, ","), strings.Join(per, ","), gcNote)
	if closed > 0 {
		fail("the proxy closed %d of the idle connections before the last sample", closed)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "idleconns: "+format+"\n", args...)
	os.Exit(1)
}

type opener struct {
	addr, host string
	use        func(net.Conn, *bufio.Reader, string) error
	tls        *tls.Config // nil: cleartext
	workers    int
	timeout    time.Duration
}

// open opens n connections, -workers at a time, and uses each once; it
// returns those that succeeded and the first error.
func (o opener) open(n int) ([]net.Conn, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	conns := make([]net.Conn, 0, n)
	var wg sync.WaitGroup
	for range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(nil, 16<<10) // one per worker: the client's memory is not measured, but keep it small
			for next.Add(1) <= int64(n) {
				c, err := o.one(br)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
				} else {
					conns = append(conns, c)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return conns, firstErr
}

func (o opener) one(br *bufio.Reader) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", o.addr, o.timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(o.timeout))
	if o.tls != nil {
		tc := tls.Client(c, o.tls)
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			return nil, err
		}
		c = tc
	}
	br.Reset(c)
	if err := o.use(c, br, o.host); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// useH1 sends one keep-alive GET and reads its answer.
func useH1(c net.Conn, br *bufio.Reader, host string) error {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\nUser-Agent: idleconns\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || resp.Close {
		return fmt.Errorf("answer %d (close %v), want 200 keep-alive", resp.StatusCode, resp.Close)
	}
	if br.Buffered() > 0 {
		return fmt.Errorf("%d unexpected bytes after the answer", br.Buffered())
	}
	return nil
}

// useH2C opens an HTTP/2 connection with prior knowledge, sends one GET on
// stream 1 and reads the answer to its END_STREAM, acknowledging the
// server's SETTINGS.
func useH2C(c net.Conn, br *bufio.Reader, host string) error {
	var out bytes.Buffer
	out.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&out, br)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		return err
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", host}, {":path", "/"}, {"user-agent", "idleconns"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		return err
	}
	if _, err := c.Write(out.Bytes()); err != nil {
		return err
	}
	status := ""
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return err
		}
		out.Reset()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if err := fr.WriteSettingsAck(); err != nil {
				return err
			}
			if _, err := c.Write(out.Bytes()); err != nil {
				return err
			}
		case *http2.MetaHeadersFrame:
			if status == "" {
				status = f.PseudoValue("status")
			}
			if f.StreamEnded() {
				return h2Done(status)
			}
		case *http2.DataFrame:
			if f.StreamEnded() {
				return h2Done(status)
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v", f.ErrCode)
		case *http2.RSTStreamFrame:
			return fmt.Errorf("RST_STREAM %v", f.ErrCode)
		}
	}
}

func h2Done(status string) error {
	if status != "200" {
		return fmt.Errorf("answer %q, want 200", status)
	}
	return nil
}

// peerClosed reports whether the peer closed c: a read that neither times
// out at once nor returns bytes (an HTTP/2 server may have sent a frame
// after the answer, such as the SETTINGS acknowledgement).
func peerClosed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	return n == 0 && (!errors.As(err, &ne) || !ne.Timeout())
}

// saveProfiles saves, from base (a /debug/pprof URL): the goroutine
// profile and dump (prefix-goroutine.pb.gz, .txt), the heap profile as
// text with the runtime's current MemStats (prefix-heap.txt), and the
// heap profile after a forced GC (prefix-heap.pb.gz), which is current
// where the plain one is as of the last GC. The forced GC comes after the
// RSS samples, so it does not flatter them.
func saveProfiles(base, prefix string) error {
	for _, p := range [][2]string{{"goroutine", "goroutine.pb.gz"}, {"goroutine?debug=1", "goroutine.txt"},
		{"heap?debug=1", "heap.txt"}, {"heap?gc=1", "heap.pb.gz"}} {
		resp, err := http.Get(base + "/" + p[0])
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", p[0], resp.Status)
		}
		if err := os.WriteFile(prefix+"-"+p[1], b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func alive(pid int) error {
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("process %d exited", pid)
	}
	return nil
}

// anonRSS is the anonymous resident memory of process pid in KiB.
func anonRSS(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no RssAnon in /proc/%d/status", pid)
}
