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

// Command grpcload is the gRPC backend and load generator of
// bench/shapes.sh's grpc shape:
//
//	grpcload serve -addr A          a gRPC server (h2c) with the standard health service
//	grpcload load -addr A …         unary grpc.health.v1.Health/Check calls for -duration
//
// serve runs until -lifetime passes (or it is killed). load opens -conns
// connections (h2c, prior knowledge), runs -streams concurrent callers on
// each, every call bounded by -timeout, and stops at -duration; it prints
// one line of key=value figures (ok, errors, seconds, rps, p50_ms, p99_ms)
// and, when some calls failed, a sample of their errors on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcload serve|load [flags] (grpcload CMD -h for the flags)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: grpcload serve|load [flags]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:17081", "listen address")
	lifetime := fs.Duration("lifetime", 6*time.Hour, "exit after this long")
	_ = fs.Parse(args)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	s := grpc.NewServer(grpc.MaxConcurrentStreams(1000))
	healthpb.RegisterHealthServer(s, health.NewServer()) // "" answers SERVING
	time.AfterFunc(*lifetime, s.Stop)
	return s.Serve(ln)
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:17081", "host:port of the gRPC server or proxy (h2c)")
	conns := fs.Int("conns", 8, "connections")
	streams := fs.Int("streams", 16, "concurrent callers per connection")
	duration := fs.Duration("duration", 5*time.Second, "how long to send calls")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of each call")
	count := fs.Int("count", 0, "stop after this many calls per caller (0: none; -duration still applies)")
	_ = fs.Parse(args)
	if *conns < 1 || *streams < 1 || *duration <= 0 {
		return errors.New("-conns, -streams and -duration must be positive")
	}

	clients := make([]healthpb.HealthClient, *conns)
	for i := range clients {
		// One ClientConn is one HTTP/2 connection; each gets its own, so
		// the proxy sees -conns connections carrying -streams streams each.
		cc, err := grpc.NewClient("passthrough:///"+*addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		clients[i] = healthpb.NewHealthClient(cc)
	}

	type result struct {
		lat  []time.Duration
		errs int
		err  error
	}
	results := make([]result, *conns**streams)
	start := time.Now()
	deadline := start.Add(*duration)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func(r *result, c healthpb.HealthClient) {
			defer wg.Done()
			r.lat = make([]time.Duration, 0, 4096)
			req := &healthpb.HealthCheckRequest{}
			for n := 0; *count == 0 || n < *count; n++ {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), *timeout)
				resp, err := c.Check(ctx, req)
				cancel()
				if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					err = fmt.Errorf("status %v", resp.GetStatus())
				}
				if err != nil {
					r.errs++
					if r.err == nil {
						r.err = err
					}
					continue
				}
				r.lat = append(r.lat, time.Since(t0))
			}
		}(&results[i], clients[i%*conns])
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()

	var all []time.Duration
	errs := 0
	var sample []string
	for _, r := range results {
		all = append(all, r.lat...)
		errs += r.errs
		if r.err != nil && len(sample) < 3 {
			sample = append(sample, r.err.Error())
		}
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)-1))
		return float64(all[i]) / float64(time.Millisecond)
	}
	fmt.Printf("ok=%d errors=%d seconds=%.3f rps=%.0f p50_ms=%.3f p99_ms=%.3f\n",
		len(all), errs, elapsed, float64(len(all))/elapsed, pct(0.50), pct(0.99))
	for _, s := range sample {
		fmt.Fprintln(os.Stderr, "grpcload: error:", s)
	}
	return nil
}
