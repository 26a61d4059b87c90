//go:build tools

// Package envtest pins the Kubernetes and etcd sources that `make envtest`
// builds into the envtest asset directory (kube-apiserver, etcd, kubectl).
package envtest

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
