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
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// startAPIServer starts kube-apiserver on the node IP - reachable from the
// host and from pods, and a valid (non-loopback) endpoint of the
// kubernetes Service - writes the admin kubeconfig and waits for /readyz.
func (cp *ControlPlane) startAPIServer(ctx context.Context, etcdURL string) error {
	port := freePort()
	if port == 0 {
		return errors.New("no free port for kube-apiserver")
	}
	nodeIP := cp.cfg.NodeIP.String()
	cp.APIPort = port
	cp.APIServer = "https://" + net.JoinHostPort(nodeIP, strconv.Itoa(port))
	var err error
	cp.api, err = process.Start(cp.command("kube-apiserver", cp.apiServerArgs(etcdURL)), cp.cfg.Registry)
	if err != nil {
		return err
	}
	if err := cp.connect(); err != nil {
		return err
	}
	if err := waitFor(ctx, cp.api, "kube-apiserver", 60*time.Second, cp.logPath("kube-apiserver"), func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok"
	}); err != nil {
		return err
	}
	cp.cfg.Logf("kube-apiserver ready on %s (pid %d)", cp.APIServer, cp.api.PID())
	return nil
}

func (cp *ControlPlane) apiServerArgs(etcdURL string) []string {
	nodeIP, keys := cp.cfg.NodeIP.String(), cp.PKI
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + nodeIP, "--advertise-address=" + nodeIP, "--secure-port=" + strconv.Itoa(cp.APIPort),
		"--cert-dir=" + filepath.Join(cp.cfg.Dir, "apiserver-certs"),
		"--tls-cert-file=" + keys.serverCertFile, "--tls-private-key-file=" + keys.serverKeyFile,
		"--client-ca-file=" + keys.caCertFile,
		"--kubelet-client-certificate=" + keys.kubeletClientCertFile,
		"--kubelet-client-key=" + keys.kubeletClientKeyFile,
		"--kubelet-certificate-authority=" + keys.caCertFile,
		"--kubelet-preferred-address-types=InternalIP",
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + keys.saPubFile,
		"--service-account-signing-key-file=" + keys.saKeyFile,
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + cp.cfg.ServiceCIDR,
		"--allow-privileged=true",
		"--disable-admission-plugins=DefaultStorageClass,DefaultIngressClass",
	}
}

// connect writes the admin kubeconfig and builds the admin client from it.
func (cp *ControlPlane) connect() error {
	kubeconfig := filepath.Join(cp.cfg.Dir, "kubeconfig")
	if err := cp.PKI.writeKubeconfig(kubeconfig, cp.APIServer); err != nil {
		return err
	}
	cp.Kubeconfig = kubeconfig
	var err error
	cp.RESTConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cp.RESTConfig.QPS, cp.RESTConfig.Burst = 100, 200
	cp.Client, err = kubernetes.NewForConfig(cp.RESTConfig)
	return err
}
