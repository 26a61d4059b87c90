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

// Command backend is the upstream of bench/proxy.sh: a minimal HTTP/1.1
// server that answers every request with a small fixed body, so the
// benchmark measures the proxies, not the backend.
package main

import (
	"flag"
	"log"
	"net/http"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "listen address")
	size := flag.Int("size", 64, "response body size in bytes")
	flag.Parse()
	body := make([]byte, *size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	length := strconv.Itoa(len(body))
	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h["Content-Type"] = []string{"text/plain"}
			h["Content-Length"] = []string{length}
			_, _ = w.Write(body)
		}),
	}
	log.Fatal(srv.ListenAndServe())
}
