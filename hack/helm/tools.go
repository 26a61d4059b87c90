//go:build tools

// Package helm pins the helm CLI that `make helm` builds into bin/ (from
// the helm module the root module requires, at the same version). Its
// dependencies are kept at the root module's versions (`make tool-modules`)
// so that both builds share their compiled packages.
package helm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
