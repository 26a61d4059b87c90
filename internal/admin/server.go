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

// Package admin is the controller's read-only admin API and dashboard:
// /api/v1/fleet, /api/v1/routing, /api/v1/problems and /api/v1/topology,
// pure views (one file each) of the latest translation and of the
// discovery server's fleet, and the embedded web dashboard that draws
// them (ui/). Every API request carries a Kubernetes bearer token; it is
// authenticated with a TokenReview and authorized with a
// SubjectAccessReview (get gateways), and it is served over TLS only.
package admin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// Options configure the admin Server.
type Options struct {
	// Addr is where it listens, e.g. ":8085".
	Addr string
	// CertDir holds tls.crt and tls.key; empty: a self-signed certificate
	// made at start (the dashboard then needs the browser's consent, or
	// `kubectl port-forward` and a curl -k).
	CertDir string
	Auth    Authorizer
	Model   *Model
	Log     logr.Logger
}

// Server serves the admin API and the dashboard.
type Server struct {
	opts    Options
	handler http.Handler
}

// NewServer builds a Server.
func NewServer(o Options) (*Server, error) {
	if o.Auth == nil || o.Model == nil {
		return nil, errors.New("the admin server needs an authorizer and a model")
	}
	s := &Server{opts: o}
	s.handler = s.routes()
	return s, nil
}

// Handler is the whole admin HTTP handler (for tests).
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	views := map[string]func(Input, *http.Request) any{
		"fleet":    func(in Input, _ *http.Request) any { return Fleet(in) },
		"routing":  func(in Input, r *http.Request) any { return Routing(in, r.URL.Query().Get("gateway")) },
		"problems": func(in Input, _ *http.Request) any { return Problems(in) },
		"topology": func(in Input, _ *http.Request) any { return Topology(in) },
	}
	for name, view := range views {
		mux.Handle("GET /api/v1/"+name, s.authorized(func(w http.ResponseWriter, r *http.Request, _ string) {
			writeJSON(w, http.StatusOK, view(s.opts.Model.Input(), r))
		}))
	}
	mux.Handle("GET /api/v1/whoami", s.authorized(func(w http.ResponseWriter, _ *http.Request, user string) {
		writeJSON(w, http.StatusOK, map[string]string{"user": user})
	}))
	mux.Handle("/api/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such admin API path"})
	}))
	mux.Handle("/", uiHandler())
	return securityHeaders(mux)
}

// authorized runs h for requests whose bearer token may read the API.
func (s *Server) authorized(h func(http.ResponseWriter, *http.Request, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			token = ""
		}
		user, err := s.opts.Auth.Authorize(r.Context(), strings.TrimSpace(token))
		switch {
		case errors.Is(err, ErrUnauthenticated):
			w.Header().Set("WWW-Authenticate", `Bearer realm="coxswain"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": err.Error()})
			return
		case errors.Is(err, ErrForbidden):
			writeJSON(w, http.StatusForbidden, map[string]string{"error": err.Error()})
			return
		case err != nil:
			s.opts.Log.Error(err, "authorizing an admin API request")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "cannot check the token with the API server"})
			return
		}
		h(w, r, user)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// securityHeaders keeps the dashboard to its own embedded assets.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// Start serves until ctx ends (a controller-runtime Runnable; every
// replica serves, a standby with an empty fleet).
func (s *Server) Start(ctx context.Context) error {
	cert, err := s.certificate()
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ErrorLog:          nil,
	}
	s.opts.Log.Info("serving the admin API and dashboard", "addr", lis.Addr().String(), "selfSigned", s.opts.CertDir == "")
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(lis, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut) //nolint:contextcheck // the manager's context has ended; shutdown gets its own
}

// NeedLeaderElection is false: standbys serve the routing view too.
func (s *Server) NeedLeaderElection() bool { return false }

func (s *Server) certificate() (tls.Certificate, error) {
	if s.opts.CertDir != "" {
		c, err := tls.LoadX509KeyPair(filepath.Join(s.opts.CertDir, "tls.crt"), filepath.Join(s.opts.CertDir, "tls.key"))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("admin certificate: %w", err)
		}
		return c, nil
	}
	return selfSigned()
}

// selfSigned makes a one-year ECDSA certificate for this pod.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	host, _ := os.Hostname()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "coxswain-admin"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", host},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
