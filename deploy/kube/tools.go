//go:build tools

// Package kube pins the Kubernetes control plane the deploy tests start
// (see go.mod); make kube builds its commands.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
