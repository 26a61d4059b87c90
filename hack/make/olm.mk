# The Operator Lifecycle Manager for the OLM end-to-end test (TestOLMInstall,
# test/e2e/olm_test.go): the OLM operator (cmd/olm) and csvrbac (the RBAC
# OLM's resolver derives from a CSV, which the catalog operator's InstallPlan
# would create) built from the module pinned in hack/olm/go.mod, and OLM's
# CRDs from the same module (deploy/chart/crds): nothing is downloaded
# beyond the Go module proxy.

OLM ?= $(LOCALBIN)/olm
OLM_CSVRBAC ?= $(LOCALBIN)/olm-csvrbac

##@ OLM

.PHONY: olm
olm: | $(LOCALBIN) ## Build the OLM operator (cmd/olm of operator-lifecycle-manager, pinned in hack/olm/go.mod) into bin/olm and hack/olm/csvrbac into bin/olm-csvrbac.
	cd hack/olm && CGO_ENABLED=0 go build -trimpath -o $(OLM) github.com/operator-framework/operator-lifecycle-manager/cmd/olm
	cd hack/olm && CGO_ENABLED=0 go build -trimpath -o $(OLM_CSVRBAC) ./csvrbac

.PHONY: olm-crds
olm-crds: ## Print the directory of OLM's CRDs (deploy/chart/crds of the pinned module).
	@cd hack/olm && echo "$$(go list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)/deploy/chart/crds"

# The OLM e2e (TestOLMInstall) runs in `make test`: build its tools first.
test: olm
