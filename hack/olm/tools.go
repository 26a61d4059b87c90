//go:build tools

// Package olm pins the Operator Lifecycle Manager sources that `make olm`
// builds into bin/olm (the OLM operator, cmd/olm) and whose CRDs
// (deploy/chart/crds) the OLM end-to-end test installs.
package olm

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
)
