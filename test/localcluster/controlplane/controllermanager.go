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
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// startControllerManager starts kube-controller-manager with the
// controllers pods and EndpointSlices need, no leader election and no
// serving port, and waits until the serviceaccount controller has created
// "default" - proof that it runs its controllers.
func (cp *ControlPlane) startControllerManager(ctx context.Context) error {
	keys := cp.PKI
	var err error
	cp.kcm, err = process.Start(cp.command("kube-controller-manager", []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--controllers=" + strings.Join(Controllers, ","),
		"--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file=" + keys.saKeyFile,
		"--root-ca-file=" + keys.caCertFile,
		"--service-cluster-ip-range=" + cp.cfg.ServiceCIDR,
		"--concurrent-deployment-syncs=5", "--concurrent-replicaset-syncs=5",
		"--concurrent-service-endpoint-syncs=5",
		"--endpointslice-updates-batch-period=0s",
	}), cp.cfg.Registry)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, cp.kcm, "kube-controller-manager", 60*time.Second, cp.logPath("kube-controller-manager"), func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := cp.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(rctx, "default", metav1.GetOptions{})
		return err == nil
	}); err != nil {
		return err
	}
	cp.cfg.Logf("kube-controller-manager ready (pid %d)", cp.kcm.PID())
	return nil
}
