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

package kubelet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The local kubelet serves the one kubelet API the harness needs: container
// logs (GET /containerLogs/<namespace>/<pod>/<container>), which the
// apiserver proxies for `kubectl logs` and pods/log clients. It listens on
// the node IP with a certificate from the cluster CA and accepts only
// clients with a certificate from that CA (the apiserver's kubelet-client
// certificate). Container output is stored as "<RFC3339Nano> <stream>
// <line>" (package process), so sinceTime, sinceSeconds, tailLines,
// timestamps, limitBytes and follow are honoured (logquery.go).

// serveAPI starts the kubelet API on the node IP and returns its port.
func (k *Kubelet) serveAPI() (int, error) {
	cert, err := tls.LoadX509KeyPair(k.servingCert, k.servingKey)
	if err != nil {
		return 0, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(k.caPEM) {
		return 0, errors.New("no CA certificate for the kubelet API")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(k.net.Gateway().String(), "0"))
	if err != nil {
		return 0, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/containerLogs/", k.handleContainerLogs)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			MinVersion:   tls.VersionTLS12,
		},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	go func() {
		<-k.ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// podLogDir holds the logs of a pod's containers: <namespace>_<name>_<uid>,
// as the kubelet names it, so containerLogPath finds a pod by name.
func (k *Kubelet) podLogDir(pod *corev1.Pod) string {
	return filepath.Join(k.logsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// containerLogPath finds the log of a container of the newest pod with
// that namespace and name.
func (k *Kubelet) containerLogPath(namespace, pod, container string) (string, error) {
	if strings.ContainsAny(namespace+pod+container, "/\\") || strings.Contains(namespace+pod+container, "..") {
		return "", errors.New("invalid name")
	}
	matches, err := filepath.Glob(filepath.Join(k.logsDir, namespace+"_"+pod+"_*", container+".log"))
	if err != nil || len(matches) == 0 {
		return "", fmt.Errorf("no log of container %q in pod %s/%s", container, namespace, pod)
	}
	best, bestTime := "", time.Time{}
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.ModTime().After(bestTime) {
			best, bestTime = m, st.ModTime()
		}
	}
	return best, nil
}

func (k *Kubelet) handleContainerLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if r.Method != http.MethodGet || len(parts) != 3 {
		http.Error(w, "want GET /containerLogs/<namespace>/<pod>/<container>", http.StatusBadRequest)
		return
	}
	q, err := parseLogQuery(r.URL.Query(), time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path, err := k.containerLogPath(parts[0], parts[1], parts[2])
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// Only complete lines; a partial last line is left for follow.
	complete := data
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		complete = data[:i+1]
	} else {
		complete = nil
	}
	offset := int64(len(complete))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(renderLog(splitLines(complete), q))
	if !q.follow {
		return
	}
	k.followLog(w, r, f, offset, q)
}

// followLog streams the complete lines appended to f after offset until
// the client goes away (at most an hour), polling.
func (k *Kubelet) followLog(w http.ResponseWriter, r *http.Request, f *os.File, offset int64, q logQuery) {
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	q.tailLines, q.since = -1, time.Time{}
	deadline := time.Now().Add(time.Hour)
	for time.Now().Before(deadline) {
		select {
		case <-r.Context().Done():
			return
		case <-k.ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		st, err := f.Stat()
		if err != nil || st.Size() <= offset {
			continue
		}
		buf := make([]byte, st.Size()-offset)
		n, _ := f.ReadAt(buf, offset)
		buf = buf[:n]
		i := bytes.LastIndexByte(buf, '\n')
		if i < 0 {
			continue
		}
		offset += int64(i + 1)
		if _, err := w.Write(renderLog(splitLines(buf[:i+1]), q)); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}
