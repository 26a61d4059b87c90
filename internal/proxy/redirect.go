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
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// writeRedirect answers with the route's RequestRedirect (step 6 of the
// request path, serve.go); the route's response header filter applies to
// the answer.
func writeRedirect(w http.ResponseWriter, r *http.Request, rt *route, isTLS bool) {
	rd := rt.redirect
	w.Header()["Location"] = []string{redirectLocation(rd, rt, r, isTLS)}
	rt.respHdr.apply(w.Header())
	w.WriteHeader(rd.StatusCode)
}

// redirectLocation builds the Location of a RequestRedirect filter. An
// unset port is the well-known port of a set scheme, else the listener's
// external port; well-known ports are omitted.
func redirectLocation(rd *snapshot.Redirect, rt *route, r *http.Request, isTLS bool) string {
	scheme := "http"
	if isTLS {
		scheme = "https"
	}
	port := rt.extPort
	if rd.Scheme != "" {
		scheme = rd.Scheme
		port = wellKnownPort(scheme)
	}
	if rd.Port != 0 {
		port = rd.Port
	}
	host := rd.Hostname
	if host == "" {
		host = trimHost(r.Host)
	}
	path := r.URL.EscapedPath()
	if rd.Path != nil {
		path = rewritePath(rd.Path, rt, r.URL.Path)
		path = (&url.URL{Path: path}).EscapedPath()
	}
	var sb strings.Builder
	sb.WriteString(scheme)
	sb.WriteString("://")
	sb.WriteString(host)
	if port != wellKnownPort(scheme) {
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(int(port)))
	}
	sb.WriteString(path)
	if r.URL.RawQuery != "" {
		sb.WriteByte('?')
		sb.WriteString(r.URL.RawQuery)
	}
	return sb.String()
}

func wellKnownPort(scheme string) int32 {
	if scheme == "https" {
		return 443
	}
	return 80
}
