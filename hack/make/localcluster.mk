# Container-free local cluster (test/localcluster, docs/localcluster.md):
# etcd, kube-apiserver and kube-controller-manager as local processes plus a
# local kubelet that runs pods as local binaries in network namespaces.
# Needs root and iproute2 (CI runs as root).

ECHO_BASIC ?= $(LOCALBIN)/echo-basic
COREDNS ?= $(LOCALBIN)/coredns
LOCALCLUSTER ?= $(LOCALBIN)/localcluster
LOCALCLUSTER_ARGS ?=

##@ Local cluster

.PHONY: localcluster-deps
localcluster-deps: ## Install iproute2 (ip) and chromium if missing; the local cluster needs ip and root, the e2e dashboard test chromium.
	@command -v ip >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing iproute2 from Debian's packages"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; \
		else \
			echo "ip not found: install iproute2 (apt-get install -y iproute2)"; exit 1; \
		fi; }
	@[ "$$(id -u)" = 0 ] || { echo "the local cluster needs root (network namespaces, a bridge, bind mounts)"; exit 1; }
	@command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || { \
		echo "installing chromium from Debian's packages (the e2e dashboard test drives it headless)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

.PHONY: localcluster-assets
localcluster-assets: ## Build etcd, kube-apiserver, kubectl and kube-controller-manager into the envtest asset directory, unless present.
	ENVTEST_EXTRA_BINARIES=kube-controller-manager hack/envtest/build.sh "$(ENVTEST_ASSETS_DIR)"

.PHONY: echo-basic
echo-basic: | $(LOCALBIN) ## Build the Gateway API echo-basic server (the binary behind echo-basic images) into bin/.
	cd test/localcluster/echobasic && CGO_ENABLED=0 go build -trimpath -o $(ECHO_BASIC) sigs.k8s.io/gateway-api/conformance/echo-basic

# CoreDNS v1.12.2 (the conformance suite's coredns image tag) with only the
# plugins the suite's Corefile uses; its own module keeps CoreDNS's
# dependencies out of ours.
.PHONY: coredns
coredns: | $(LOCALBIN) ## Build CoreDNS (the binary behind coredns images: the conformance suite's UDP backend) into bin/.
	cd test/localcluster/coredns && CGO_ENABLED=0 go build -trimpath -o $(COREDNS) .

.PHONY: localcluster-bin
localcluster-bin: | $(LOCALBIN) ## Build the localcluster command into bin/.
	CGO_ENABLED=0 go build -trimpath -o $(LOCALCLUSTER) ./test/localcluster/cmd/localcluster

# The binary behind coxswain images (without `make build`'s regeneration).
.PHONY: coxswain-bin
coxswain-bin: | $(LOCALBIN)
	CGO_ENABLED=0 go build -trimpath -ldflags "$(GO_LDFLAGS)" -o $(LOCALBIN)/coxswain ./cmd/coxswain
	CGO_ENABLED=0 go build -trimpath -ldflags "$(GO_LDFLAGS)" -o $(LOCALBIN)/coxswain-proxy ./cmd/coxswain-proxy

.PHONY: localcluster
localcluster: localcluster-deps localcluster-assets echo-basic coredns localcluster-bin coxswain-bin ## Run the local cluster in the foreground (Ctrl-C stops it); prints KUBECONFIG.
	$(LOCALCLUSTER) up --assets "$(ENVTEST_ASSETS_DIR)" --echo-basic $(ECHO_BASIC) --coxswain $(LOCALBIN)/coxswain --coredns $(COREDNS) $(LOCALCLUSTER_ARGS)

.PHONY: localcluster-down
localcluster-down: localcluster-bin ## Remove what a crashed local cluster left behind (processes, pod namespaces, bridge).
	$(LOCALCLUSTER) down

.PHONY: test-localcluster
test-localcluster: localcluster-deps localcluster-assets echo-basic coredns ## Run the local cluster's own tests (needs root).
	LOCALCLUSTER_ECHO_BASIC=$(ECHO_BASIC) LOCALCLUSTER_COREDNS=$(COREDNS) KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" go test ./test/localcluster/... -count=1 -v -timeout 10m $(TEST_ARGS)

.PHONY: dev
dev: localcluster-deps localcluster-assets echo-basic localcluster-bin coxswain-bin ## Run Coxswain on the local cluster (controller and proxies as local pods), with the samples and demo backends; prints curl commands. Ctrl-C stops it.
	$(LOCALCLUSTER) dev --assets "$(ENVTEST_ASSETS_DIR)" --echo-basic $(ECHO_BASIC) --coxswain $(LOCALBIN)/coxswain --repo $(CURDIR) \
		--gateway-api-crds "$$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)/config/crd/standard" $(LOCALCLUSTER_ARGS)

.PHONY: dev-check
dev-check: localcluster-deps localcluster-assets echo-basic localcluster-bin coxswain-bin ## make dev, then send its curl requests, check each reaches its backend, and stop (for CI).
	$(LOCALCLUSTER) dev --check --assets "$(ENVTEST_ASSETS_DIR)" --echo-basic $(ECHO_BASIC) --coxswain $(LOCALBIN)/coxswain --repo $(CURDIR) \
		--gateway-api-crds "$$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)/config/crd/standard" $(LOCALCLUSTER_ARGS)

# The local-cluster tests in `make test` run the coredns image too.
test: coredns
