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

// Command l4load is the load generator and the backends of bench/l4.sh,
// the L4 (TCP and TLS passthrough) benchmark:
//
//	l4load cert -dir DIR                   a throwaway self-signed certificate for *.bench.local
//	l4load echo -addr A [-cert F -key F]   echoes what it reads (over TLS with -cert/-key or -tls)
//	l4load sink -addr A [-cert F -key F]   reads to EOF, answers the byte count (8 bytes, big endian)
//	l4load conn -addr A [-sni H,H…] …      a new connection per exchange: write, read the echo, close
//	l4load bulk -addr A [-sni H,H…] …      long-lived connections writing to a sink
//
// The backends run until -lifetime passes (or they are killed); conn and
// bulk stop at -duration and/or -count and print one line of key=value
// figures (ok, errors, bytes, seconds) on stdout, and a sample of their
// errors on stderr. Every network operation has a deadline.
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: l4load cert|echo|sink|conn|bulk [flags] (l4load CMD -h for the flags)")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "cert":
		err = certCmd(args)
	case "echo", "sink":
		err = serveCmd(cmd, args)
	case "conn":
		err = connCmd(args)
	case "bulk":
		err = bulkCmd(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "l4load %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

// ---- certificate ----

// newCert makes a self-signed ECDSA P-256 certificate for *.bench.local
// (and bench.local), valid for a day, usable as its own root.
func newCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "l4load bench"},
		DNSNames:              []string{"*.bench.local", "bench.local"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

func certCmd(args []string) error {
	fs := flag.NewFlagSet("cert", flag.ExitOnError)
	dir := fs.String("dir", ".", "directory to write cert.pem and key.pem to")
	_ = fs.Parse(args)
	c, k, err := newCert()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "cert.pem"), c, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*dir, "key.pem"), k, 0o600)
}

// ---- backends ----

// serveCmd runs the echo or sink backend until -lifetime passes.
func serveCmd(mode string, args []string) error {
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:19080", "listen address")
	certFile := fs.String("cert", "", "PEM certificate: serve TLS (terminated here)")
	keyFile := fs.String("key", "", "PEM key of -cert")
	genTLS := fs.Bool("tls", false, "serve TLS with a certificate generated at start (when no -cert)")
	lifetime := fs.Duration("lifetime", 6*time.Hour, "exit after this long")
	idle := fs.Duration("idle", time.Minute, "close a connection after this long without a byte")
	_ = fs.Parse(args)

	var cfg *tls.Config
	switch {
	case *certFile != "":
		crt, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return err
		}
		cfg = serverTLS(crt)
	case *genTLS:
		c, k, err := newCert()
		if err != nil {
			return err
		}
		crt, err := tls.X509KeyPair(c, k)
		if err != nil {
			return err
		}
		cfg = serverTLS(crt)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	time.AfterFunc(*lifetime, func() { _ = ln.Close() })
	handle := echo
	if mode == "sink" {
		handle = sink
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil // the lifetime ended
			}
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		go func() {
			conn := c
			if cfg != nil {
				tc := tls.Server(c, cfg)
				_ = c.SetDeadline(time.Now().Add(*idle))
				if err := tc.Handshake(); err != nil {
					_ = c.Close()
					return
				}
				conn = tc
			}
			// A *tls.Conn's Close sends close_notify before the FIN.
			defer func() { _ = conn.Close() }()
			handle(conn, *idle)
		}()
	}
}

// serverTLS serves crt without session tickets: clients never resume, so
// every connection is a full handshake and no ticket crosses the proxy.
func serverTLS(crt tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{crt}, MinVersion: tls.VersionTLS12, SessionTicketsDisabled: true}
}

// echo writes back what it reads until EOF; the caller then closes.
func echo(c net.Conn, idle time.Duration) {
	buf := make([]byte, 32<<10)
	for {
		_ = c.SetDeadline(time.Now().Add(idle))
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sink reads until EOF, then answers how many bytes it read.
func sink(c net.Conn, idle time.Duration) {
	buf := make([]byte, 256<<10)
	var total uint64
	for {
		_ = c.SetDeadline(time.Now().Add(idle))
		n, err := c.Read(buf)
		total += uint64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return
		}
	}
	var out [8]byte
	binary.BigEndian.PutUint64(out[:], total)
	_, _ = c.Write(out[:])
}

// ---- load generators ----

// client is what conn and bulk share: where to connect and how.
type client struct {
	addr    string
	hosts   []string // SNI names; none: plain TCP
	roots   *x509.CertPool
	timeout time.Duration
	dialer  net.Dialer
}

func (cl *client) flags(fs *flag.FlagSet) (sni, ca *string) {
	fs.StringVar(&cl.addr, "addr", "127.0.0.1:19101", "address to connect to")
	fs.DurationVar(&cl.timeout, "timeout", 5*time.Second, "deadline of each connection's exchange (conn) or of each write (bulk)")
	return fs.String("sni", "", "comma-separated SNI names: speak TLS, spreading connections over them (none: plain TCP)"),
		fs.String("ca", "", "PEM certificate to verify the server against (none: no verification)")
}

func (cl *client) setup(sni, ca string) error {
	if sni != "" {
		cl.hosts = strings.Split(sni, ",")
	}
	if ca != "" {
		pemBytes, err := os.ReadFile(ca)
		if err != nil {
			return err
		}
		cl.roots = x509.NewCertPool()
		if !cl.roots.AppendCertsFromPEM(pemBytes) {
			return fmt.Errorf("%s: no certificate", ca)
		}
	}
	cl.dialer.Timeout = cl.timeout
	return nil
}

// dial connects, and with SNI names completes a TLS handshake with the
// i-th name (modulo their count). raw is the TCP connection under c.
func (cl *client) dial(i uint64) (c net.Conn, raw *net.TCPConn, err error) {
	nc, err := cl.dialer.Dial("tcp", cl.addr)
	if err != nil {
		return nil, nil, err
	}
	raw = nc.(*net.TCPConn)
	if len(cl.hosts) == 0 {
		return raw, raw, nil
	}
	_ = raw.SetDeadline(time.Now().Add(cl.timeout))
	tc := tls.Client(raw, &tls.Config{
		ServerName:         cl.hosts[i%uint64(len(cl.hosts))],
		RootCAs:            cl.roots,
		InsecureSkipVerify: cl.roots == nil,
		MinVersion:         tls.VersionTLS12,
	})
	if err := tc.Handshake(); err != nil {
		_ = raw.Close()
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	return tc, raw, nil
}

// closeWrite sends a TLS close_notify (when c is TLS) and a TCP FIN.
func closeWrite(c net.Conn, raw *net.TCPConn) error {
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil {
			return err
		}
	}
	return raw.CloseWrite()
}

// expectEOF reads c to its end, which must come next (a TLS close_notify
// or a FIN).
func expectEOF(c net.Conn) error {
	n, err := io.Copy(io.Discard, c)
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("%d unexpected bytes", n)
	}
	return nil
}

// tally counts outcomes across goroutines and keeps a sample of errors.
type tally struct {
	ok, errs, bytes atomic.Uint64
	mu              sync.Mutex
	kinds           map[string]int
}

func (t *tally) fail(err error) {
	t.errs.Add(1)
	msg := err.Error()
	// Ephemeral ports make every message unique; keep its shape.
	if i := strings.LastIndex(msg, "->"); i >= 0 {
		msg = "…" + msg[i:]
	}
	t.mu.Lock()
	if t.kinds == nil {
		t.kinds = map[string]int{}
	}
	t.kinds[msg]++
	t.mu.Unlock()
}

func (t *tally) report(start time.Time) {
	fmt.Printf("ok=%d errors=%d bytes=%d seconds=%.3f\n", t.ok.Load(), t.errs.Load(), t.bytes.Load(), time.Since(start).Seconds())
	t.mu.Lock()
	defer t.mu.Unlock()
	kinds := make([]string, 0, len(t.kinds))
	for k := range t.kinds {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return t.kinds[kinds[i]] > t.kinds[kinds[j]] })
	for i, k := range kinds {
		if i == 5 {
			fmt.Fprintf(os.Stderr, "  … %d more kinds of error\n", len(kinds)-i)
			break
		}
		fmt.Fprintf(os.Stderr, "  %d× %s\n", t.kinds[k], k)
	}
}

// connCmd runs -c workers, each opening a new connection per exchange
// (connect, [TLS handshake,] write -size bytes, read their echo, close),
// until -duration passes or -count exchanges were started.
func connCmd(args []string) error {
	fs := flag.NewFlagSet("conn", flag.ExitOnError)
	var cl client
	sni, ca := cl.flags(fs)
	workers := fs.Int("c", 32, "concurrent connections")
	duration := fs.Duration("duration", 0, "stop starting exchanges after this long")
	count := fs.Uint64("count", 0, "stop after this many exchanges")
	size := fs.Int("size", 64, "bytes written and echoed per exchange")
	_ = fs.Parse(args)
	if *duration <= 0 && *count == 0 {
		return errors.New("give -duration, -count or both")
	}
	if err := cl.setup(*sni, *ca); err != nil {
		return err
	}
	payload := make([]byte, *size)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	var t tally
	var next atomic.Uint64
	start := time.Now()
	end := start.Add(*duration)
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			buf := make([]byte, len(payload))
			for {
				if *duration > 0 && !time.Now().Before(end) {
					return
				}
				i := next.Add(1) - 1
				if *count > 0 && i >= *count {
					return
				}
				if err := cl.exchange(i, payload, buf); err != nil {
					t.fail(err)
					time.Sleep(time.Millisecond) // no busy loop against a refusing port
					continue
				}
				t.ok.Add(1)
				t.bytes.Add(uint64(len(payload)))
			}
		})
	}
	wg.Wait()
	t.report(start)
	return nil
}

// exchange is one connection of conn. Plain TCP closes once the echo is
// read; TLS first ends its write side (close_notify, FIN) and reads the
// server's close_notify and FIN, so neither side is reset.
func (cl *client) exchange(i uint64, payload, buf []byte) error {
	c, raw, err := cl.dial(i)
	if err != nil {
		return err
	}
	defer func() { _ = raw.Close() }()
	_ = raw.SetDeadline(time.Now().Add(cl.timeout))
	if _, err := c.Write(payload); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if _, err := io.ReadFull(c, buf); err != nil {
		return fmt.Errorf("read echo: %w", err)
	}
	if !bytes.Equal(buf, payload) {
		return errors.New("echo differs from what was written")
	}
	if len(cl.hosts) == 0 {
		return nil
	}
	if err := closeWrite(c, raw); err != nil {
		return fmt.Errorf("close write: %w", err)
	}
	if err := expectEOF(c); err != nil {
		return fmt.Errorf("after the echo: %w", err)
	}
	return nil
}

// bulkCmd runs -c connections, each writing -chunk bytes at a time for
// -duration, then half-closing and checking the sink's count.
func bulkCmd(args []string) error {
	fs := flag.NewFlagSet("bulk", flag.ExitOnError)
	var cl client
	sni, ca := cl.flags(fs)
	conns := fs.Int("c", 8, "concurrent connections")
	duration := fs.Duration("duration", 0, "how long each connection writes")
	chunk := fs.Int("chunk", 64<<10, "bytes per write")
	_ = fs.Parse(args)
	if *duration <= 0 {
		return errors.New("give -duration")
	}
	if err := cl.setup(*sni, *ca); err != nil {
		return err
	}
	data := make([]byte, *chunk)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var t tally
	start := time.Now()
	end := start.Add(*duration)
	var wg sync.WaitGroup
	for i := range *conns {
		wg.Go(func() {
			sent, err := cl.stream(uint64(i), data, end)
			t.bytes.Add(sent)
			if err != nil {
				t.fail(err)
				return
			}
			t.ok.Add(1)
		})
	}
	wg.Wait()
	t.report(start)
	return nil
}

// stream is one connection of bulk: it writes data until end, ends its
// write side, and checks that the sink counted every byte.
func (cl *client) stream(i uint64, data []byte, end time.Time) (uint64, error) {
	c, raw, err := cl.dial(i)
	if err != nil {
		return 0, err
	}
	defer func() { _ = raw.Close() }()
	var sent uint64
	for time.Now().Before(end) {
		_ = raw.SetDeadline(time.Now().Add(cl.timeout))
		n, err := c.Write(data)
		sent += uint64(n)
		if err != nil {
			return sent, fmt.Errorf("write: %w", err)
		}
	}
	_ = raw.SetDeadline(time.Now().Add(cl.timeout))
	if err := closeWrite(c, raw); err != nil {
		return sent, fmt.Errorf("close write: %w", err)
	}
	var got [8]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return sent, fmt.Errorf("read the sink's count: %w", err)
	}
	if n := binary.BigEndian.Uint64(got[:]); n != sent {
		return sent, fmt.Errorf("sent %d bytes, the sink counted %d", sent, n)
	}
	if err := expectEOF(c); err != nil {
		return sent, fmt.Errorf("after the count: %w", err)
	}
	return sent, nil
}
