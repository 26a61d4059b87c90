# End-to-end tests on the container-free local cluster (test/e2e,
# docs/e2e.md): Coxswain installed from config/default, controller and
# proxies running as pods, real traffic from the test process. Needs root
# and iproute2 (CI runs as root); skipped with a message otherwise.

E2E_TIMEOUT ?= 30m

##@ End-to-end

.PHONY: test-e2e
test-e2e: localcluster-deps localcluster-assets echo-basic coxswain-bin olm ## Run the local-cluster end-to-end tests (needs root; about a minute once built).
	LOCALCLUSTER_ECHO_BASIC=$(ECHO_BASIC) LOCALCLUSTER_COXSWAIN=$(LOCALBIN)/coxswain OLM_BIN=$(OLM) OLM_CSVRBAC=$(OLM_CSVRBAC) KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" \
		go test ./test/e2e/ -run '^(TestLocalCluster|TestOLMInstall)$$' -count=1 -v -timeout $(E2E_TIMEOUT) $(TEST_ARGS)
