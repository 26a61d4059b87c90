//go:build tools

// Package envtest pins the Kubernetes and etcd sources that `make envtest`
// builds into the envtest asset directory (kube-apiserver, etcd, kubectl,
// kube-controller-manager).
package envtest

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
