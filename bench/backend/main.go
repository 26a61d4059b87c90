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

// Command backend is the upstream of bench/proxy.sh and bench/policies.sh:
// a minimal HTTP/1.1 server that answers every request with a fixed
// text/plain body, so the benchmarks measure the proxies, not the backend.
//
// Two paths differ, for bench/shapes.sh: /upload reads the request body to
// its end and discards it before answering (so a client can stream large
// bodies over a keep-alive connection), and /big answers -big-size bytes
// (1 MiB by default) of the same kind instead of -size.
//
// The body is the alphabet repeated (-body alphabet, the default) or
// English-like words (-body text): the alphabet compresses to almost
// nothing, the words about as well as prose does (gzip: about a third),
// which is what a compression benchmark needs.
package main

import (
	"flag"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// words are the vocabulary of -body text.
var words = []string{
	"the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by",
	"on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had",
	"they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if",
	"more", "when", "will", "would", "who", "so", "no", "proxy", "request", "gateway", "route",
	"backend", "listener", "policy", "header", "response", "connection", "latency", "kubernetes",
	"certificate", "compression", "token", "cluster", "service", "endpoint", "timeout", "session",
}

// body returns size bytes of the given kind.
func body(kind string, size int) []byte {
	b := make([]byte, 0, size+16)
	switch kind {
	case "alphabet":
		for i := range size {
			b = append(b, 'a'+byte(i%26))
		}
	case "text":
		r := rand.New(rand.NewPCG(1, 2)) // fixed seed: the same body every run
		for n := 0; len(b) < size; n++ {
			b = append(b, words[r.IntN(len(words))]...)
			switch {
			case n%97 == 96:
				b = append(b, ".\n"...)
			case n%13 == 12:
				b = append(b, ", "...)
			default:
				b = append(b, ' ')
			}
		}
	default:
		log.Fatalf("-body %q: want alphabet or text", kind)
	}
	return b[:size]
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "listen address")
	size := flag.Int("size", 64, "response body size in bytes")
	kind := flag.String("body", "alphabet", "response body: alphabet (the alphabet repeated) or text (English-like words, compressible like prose)")
	bigSize := flag.Int("big-size", 1<<20, "response body size in bytes of /big")
	flag.Parse()
	payload := body(*kind, *size)
	length := strconv.Itoa(len(payload))
	big := body(*kind, *bigSize)
	bigLength := strconv.Itoa(len(big))
	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h["Content-Type"] = []string{"text/plain"}
			switch r.URL.Path {
			case "/big":
				h["Content-Length"] = []string{bigLength}
				_, _ = w.Write(big)
				return
			case "/upload":
				if _, err := io.Copy(io.Discard, r.Body); err != nil {
					return // the client went away mid-body: nothing to answer
				}
			}
			h["Content-Length"] = []string{length}
			_, _ = w.Write(payload)
		}),
	}
	log.Fatal(srv.ListenAndServe())
}
