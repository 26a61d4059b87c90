# Upstream Gateway API conformance (test/conformance, docs/conformance.md):
# the unmodified sigs.k8s.io/gateway-api/conformance suite against Coxswain on
# the container-free local cluster. Needs root and iproute2 (CI runs as root).

CONFORMANCE_DIR := test/conformance
CONFORMANCE_TEST_BIN ?= $(LOCALBIN)/conformance.test
# Gateway API CRD channel installed in the cluster (standard or experimental).
CONFORMANCE_CHANNEL ?= standard
# Comma-separated conformance profiles (GATEWAY-HTTP, GATEWAY-GRPC, GATEWAY-TLS, ...).
CONFORMANCE_PROFILES ?= GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,GATEWAY-TCP,GATEWAY-UDP
# default: GatewayClass coxswain (shared proxy pool); dedicated: GatewayClass
# coxswain-dedicated, every Gateway gets its own proxy Deployment and Service.
CONFORMANCE_MODE ?= default
# The report follows the upstream naming: <channel>-<version>-<mode>-report.yaml.
CONFORMANCE_REPORT ?= $(CURDIR)/$(CONFORMANCE_DIR)/reports/$(CONFORMANCE_CHANNEL)-$(VERSION)-$(CONFORMANCE_MODE)-report.yaml
CONFORMANCE_WORKDIR ?= /tmp/coxswain-conformance
# Extra suite flags, e.g. CONFORMANCE_ARGS='-run-test=HTTPRouteSimpleSameNamespace'.
CONFORMANCE_ARGS ?=

##@ Conformance

.PHONY: conformance-bin
conformance-bin: | $(LOCALBIN) ## Compile the conformance test binary (its own module, test/conformance).
	cd $(CONFORMANCE_DIR) && go test -c -o $(CONFORMANCE_TEST_BIN) .

.PHONY: conformance
conformance: localcluster-deps localcluster-assets echo-basic coredns localcluster-bin coxswain-bin conformance-bin ## Run the Gateway API conformance suite (the five Gateway profiles) on the local cluster; writes the report YAML and prints the counts.
	LOCALCLUSTER=$(LOCALCLUSTER) COXSWAIN=$(LOCALBIN)/coxswain ECHO_BASIC=$(ECHO_BASIC) COREDNS=$(COREDNS) \
	ASSETS="$(ENVTEST_ASSETS_DIR)" REPO=$(CURDIR) \
	GATEWAY_API_CRDS="$$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)/config/crd/$(CONFORMANCE_CHANNEL)" \
	TEST_BIN=$(CONFORMANCE_TEST_BIN) REPORT=$(CONFORMANCE_REPORT) WORKDIR=$(CONFORMANCE_WORKDIR) \
	VERSION=$(VERSION) PROFILES=$(CONFORMANCE_PROFILES) MODE=$(CONFORMANCE_MODE) CONFORMANCE_ARGS='$(CONFORMANCE_ARGS)' \
	$(CONFORMANCE_DIR)/run.sh

.PHONY: test-conformance-unit
test-conformance-unit: ## Unit tests of the conformance module (no cluster: the suite itself skips).
	cd $(CONFORMANCE_DIR) && go vet ./... && go test ./... -count=1
