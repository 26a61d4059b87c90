# End-to-end tests on the container-free local cluster (test/e2e,
# docs/e2e.md): Coxswain installed from config/default, controller and
# proxies running as pods, real traffic from the test process. Needs root
# and iproute2 (CI runs as root); skipped with a message otherwise.

E2E_TIMEOUT ?= 40m

##@ End-to-end

.PHONY: test-e2e
test-e2e: localcluster-deps localcluster-assets echo-basic coredns coxswain-bin helm olm ## Run the local-cluster end-to-end tests: the feature cases, every install path with upgrades and rollbacks (TestDay2) and OLM (needs root).
	LOCALCLUSTER_ECHO_BASIC=$(ECHO_BASIC) LOCALCLUSTER_COXSWAIN=$(LOCALBIN)/coxswain LOCALCLUSTER_COREDNS=$(COREDNS) OLM_BIN=$(OLM) OLM_CSVRBAC=$(OLM_CSVRBAC) KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" \
		go test ./test/e2e/ -run '^(TestLocalCluster|TestDay2|TestOLMInstall)$$' -count=1 -v -timeout $(E2E_TIMEOUT) $(TEST_ARGS)
