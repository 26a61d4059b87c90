# Coxswain — Kubernetes Gateway API + Ingress controller.
# Every tool the build and tests need is installed into ./bin on first use,
# from the Go module proxy only. `make help` lists the targets.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
IMG ?= coxswain:$(VERSION)

# Kubernetes version of the envtest control plane (kube-apiserver, etcd).
ENVTEST_K8S_VERSION ?= 1.37.2
# Where envtest assets live: the same place setup-envtest uses, outside the
# clone, so every clone on a machine (CI clones too) shares one build.
ENVTEST_ASSETS_ROOT ?= $(HOME)/.local/share/kubebuilder-envtest
ENVTEST_ASSETS_DIR ?= $(ENVTEST_ASSETS_ROOT)/k8s/$(ENVTEST_K8S_VERSION)-linux-amd64

## Tool binaries and versions
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.8.2
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)

GO_LDFLAGS := -s -w \
	-X github.com/coxswain-go/coxswain/internal/version.Version=$(VERSION) \
	-X github.com/coxswain-go/coxswain/internal/version.Commit=$(COMMIT)

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and the manager ClusterRole from markers.
	$(CONTROLLER_GEN) rbac:roleName=coxswain-manager-role crd:allowDangerousTypes=false paths="./api/..." paths="./internal/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: test
test: manifests generate fmt vet envtest kustomize ## Regenerate, then run unit and envtest (real kube-apiserver + etcd) tests.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" KUSTOMIZE="$(KUSTOMIZE)" \
		go test ./... -count=1 -timeout 20m $(TEST_ARGS)

.PHONY: verify
verify: manifests generate ## Fail when generated code, manifests or go.mod are stale.
	go mod tidy -diff
	@if [ -n "$$(git status --porcelain -- api config)" ]; then \
		echo "generated files are out of date; run 'make manifests generate' and commit:"; \
		git status --porcelain -- api config; git --no-pager diff -- api config | head -100; exit 1; \
	fi

.PHONY: run
run: manifests generate fmt vet ## Run the controller against the cluster in your kubeconfig.
	go run -ldflags "$(GO_LDFLAGS)" ./cmd/coxswain serve controller --leader-elect=false

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the coxswain binary into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(GO_LDFLAGS)" -o $(LOCALBIN)/coxswain ./cmd/coxswain

# docker-build needs a container engine (none exists on the development
# machines; use it where one does).
.PHONY: docker-build
docker-build: ## Build the container image (needs a container engine).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the container image.
	docker push $(IMG)

.PHONY: build-installer
build-installer: manifests generate kustomize ## Render dist/install.yaml: CRDs, RBAC and the controller.
	mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default > dist/install.yaml
	cd config/manager && $(KUSTOMIZE) edit set image controller=coxswain:latest

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

KUBECTL ?= kubectl

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster in your kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Remove the CRDs. ignore-not-found=true tolerates missing ones.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy the controller (image IMG) to the cluster in your kubeconfig.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply --server-side -f -
	cd config/manager && $(KUSTOMIZE) edit set image controller=coxswain:latest

.PHONY: undeploy
undeploy: kustomize ## Remove the controller. ignore-not-found=true tolerates missing objects.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

##@ Dependencies

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into bin/ if missing.
$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_GEN_VERSION))

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Install kustomize into bin/ if missing.
$(KUSTOMIZE): | $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: envtest
envtest: ## Build kube-apiserver, etcd and kubectl for envtest from Go modules, unless present.
	hack/envtest/build.sh "$(ENVTEST_ASSETS_DIR)"

# go-install-tool installs package $2 at version $3 as $1 (versioned name, with
# an unversioned symlink beside it).
define go-install-tool
@[ -f "$(1)" ] || { \
set -e; \
echo "installing $(2)@$(3) into $(LOCALBIN)"; \
rm -f "$(1)"; \
GOBIN="$(LOCALBIN)" go install "$(2)@$(3)"; \
mv "$(LOCALBIN)/$$(basename "$(subst /v5,,$(2))")" "$(1)"; \
} ;\
ln -sf "$$(basename "$(1)")" "$(LOCALBIN)/$$(basename "$(subst /v5,,$(2))")"
endef
