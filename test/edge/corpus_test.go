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

package edge

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// edgeSnapshot routes host a.example on one HTTP listener: /admin is
// guarded by a 403 direct response, /redirect answers 302, /cors has a
// CORS policy, /limited takes bodies up to 10 bytes, the rest goes to the
// backend. Other hosts get 404.
const edgeSnapshot = `
scope: {kind: SharedPool}
endpointSets:
- name: edge/backend:80
  endpoints:
  - {address: "{{BACKEND_HOST}}", port: {{BACKEND_PORT}}}
listeners:
- name: edge
  port: {{PORT}}
  protocol: HTTP
  virtualHosts:
  - hostname: a.example
    routes:
    - id: admin
      match: {path: {type: PathPrefix, value: /admin}}
      directResponse: {statusCode: 403, body: forbidden}
    - id: redirect
      match: {path: {type: PathPrefix, value: /redirect}}
      redirect: {path: {type: ReplaceFullPath, value: /elsewhere}, statusCode: 302}
    - id: cors
      match: {path: {type: PathPrefix, value: /cors}}
      cors: {allowOrigins: ["https://app.example"], allowMethods: [GET, POST]}
      backends: [{endpointSet: edge/backend:80, weight: 1}]
    - id: limited
      match: {path: {type: PathPrefix, value: /limited}}
      maxRequestBodyBytes: 10
      backends: [{endpointSet: edge/backend:80, weight: 1}]
    - id: rest
      match: {path: {type: PathPrefix, value: /}}
      backends: [{endpointSet: edge/backend:80, weight: 1}]
`

// vector is one raw request case of testdata/corpus.yaml.
type vector struct {
	Name string `json:"name"`
	// Raw is sent as is on one connection.
	Raw string `json:"raw"`
	// Methods of the requests answered, in order, when not all GET (a
	// HEAD answer has no body).
	Methods []string `json:"methods,omitempty"`
	// Statuses the proxy answers, in order, and whether it then closes.
	Statuses []int `json:"statuses"`
	Closed   bool  `json:"closed"`
	// Backend is every request the backend receives ("METHOD URI").
	Backend []string `json:"backend"`
	// BackendMaySee are requests that may reach the backend, or not.
	BackendMaySee []string `json:"backendMaySee,omitempty"`
	// AbsentHeaders must not reach the backend.
	AbsentHeaders []string `json:"absentHeaders,omitempty"`
	// NetHTTP is "same" when net/http's server, given the same bytes,
	// parses them into the same requests with the same framing answers
	// (4xx/5xx of the parser) and the same connection fate; else why the
	// proxy answers differently on purpose.
	NetHTTP string `json:"nethttp"`
}

func loadCorpus(t *testing.T) []vector {
	t.Helper()
	data, err := os.ReadFile("testdata/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := yaml.UnmarshalStrict(data, &vs); err != nil {
		t.Fatal(err)
	}
	for i := range vs {
		vs[i].Raw = expandFill(vs[i].Raw)
	}
	names := map[string]bool{}
	for _, v := range vs {
		if v.Name == "" || names[v.Name] || v.NetHTTP == "" {
			t.Fatalf("corpus entry %q: names must be unique and nethttp set", v.Name)
		}
		names[v.Name] = true
	}
	return vs
}

// fillMark is how a vector writes a long body: "{N bytes}" stands for N
// bytes of "x".
var fillMark = regexp.MustCompile(`\{([0-9]+) bytes\}`)

func expandFill(raw string) string {
	return fillMark.ReplaceAllStringFunc(raw, func(m string) string {
		n, _ := strconv.Atoi(fillMark.FindStringSubmatch(m)[1])
		return strings.Repeat("x", n)
	})
}

// framing reduces an exchange to what the HTTP parser decided: the
// statuses of parse errors, every other answer as "ok" (routing answers
// differ between a proxy and a plain server by design), and the
// connection's fate.
func framing(e exchange) string {
	var kinds []string
	for _, s := range e.statuses {
		switch s {
		case 400, 408, 411, 413, 414, 417, 431, 501, 505:
			kinds = append(kinds, fmt.Sprint(s))
		default:
			kinds = append(kinds, "ok")
		}
	}
	fate := "open"
	if e.closed {
		fate = "closed"
	}
	return strings.Join(kinds, ",") + " " + fate
}

// TestRawRequestCorpus sends every vector of testdata/corpus.yaml to the
// real binary's proxy and to net/http's server over loopback, each vector
// from its own loopback source address so they run side by side, and
// checks the proxy's answers, connection fate and backend requests, and
// its agreement with net/http where the corpus says "same".
func TestRawRequestCorpus(t *testing.T) {
	vectors := loadCorpus(t)
	if len(vectors) < 60 {
		t.Fatalf("the corpus has %d vectors, want at least 60", len(vectors))
	}
	backendRec, refRec := newRecorder(), newRecorder()
	backend := startBackend(t, backendRec)
	ref := startReference(t, refRec)
	px := startProxy(t, edgeSnapshot, backend)

	// Every vector runs at once, from its own source address (subtests
	// with t.Parallel would be bounded by GOMAXPROCS, and each vector
	// waits out a quiet period).
	const quiet = 1500 * time.Millisecond
	type outcome struct{ proxy, ref exchange }
	outcomes := make([]outcome, len(vectors))
	srcs := make([]string, len(vectors))
	var wg sync.WaitGroup
	for i, v := range vectors {
		srcs[i] = fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250)
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i].proxy = send(px.addr, srcs[i], []byte(v.Raw), v.Methods, quiet)
			outcomes[i].ref = send(ref, srcs[i], []byte(v.Raw), v.Methods, quiet)
		}()
	}
	wg.Wait()
	for i, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			got, refGot := outcomes[i].proxy, outcomes[i].ref
			want := exchange{statuses: v.Statuses, closed: v.Closed}
			if !slices.Equal(got.statuses, want.statuses) || got.closed != want.closed {
				t.Errorf("proxy answered %v, want %v", got, want)
			}
			var lines []string
			for _, s := range backendRec.of(srcs[i]) {
				if slices.Contains(v.BackendMaySee, s.line) {
					continue
				}
				lines = append(lines, s.line)
				for _, h := range v.AbsentHeaders {
					if _, ok := s.header[http.CanonicalHeaderKey(h)]; ok {
						t.Errorf("backend received header %s on %s", h, s.line)
					}
				}
			}
			if !slices.Equal(lines, v.Backend) && (len(lines) != 0 || len(v.Backend) != 0) {
				t.Errorf("backend received %q, want %q", lines, v.Backend)
			}
			if v.NetHTTP == "same" && framing(got) != framing(refGot) {
				t.Errorf("net/http's server answers %v (%s), the proxy %v (%s); the corpus says they agree",
					refGot, framing(refGot), got, framing(got))
			}
			if v.NetHTTP != "same" && framing(got) == framing(refGot) {
				t.Errorf("net/http's server frames it as the proxy does (%s); the corpus says they differ: %s", framing(got), v.NetHTTP)
			}
		})
	}
}
