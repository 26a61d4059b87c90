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

package controlplane

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// startEtcd starts etcd on loopback with a fresh data directory and waits
// for /health; it returns the client URL.
func (cp *ControlPlane) startEtcd(ctx context.Context) (string, error) {
	clientPort, peerPort := freePort(), freePort()
	if clientPort == 0 || peerPort == 0 {
		return "", errors.New("no free loopback port for etcd")
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	var err error
	cp.etcd, err = process.Start(cp.command("etcd", []string{
		"--name=localcluster", "--data-dir=" + filepath.Join(cp.cfg.Dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=localcluster=" + peerURL, "--unsafe-no-fsync=true",
	}), cp.cfg.Registry)
	if err != nil {
		return "", err
	}
	if err := waitFor(ctx, cp.etcd, "etcd", 30*time.Second, cp.logPath("etcd"), func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, clientURL+"/health", nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		return "", err
	}
	cp.cfg.Logf("etcd ready on %s (pid %d)", clientURL, cp.etcd.PID())
	return clientURL, nil
}
