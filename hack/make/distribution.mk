##@ Distribution (OLM bundle, Helm chart)

# The bundle's version (the CSV is coxswain.v$(BUNDLE_VERSION)) and the
# controller image it deploys. The checked-in bundle/ uses these defaults;
# `make bundle-verify` (part of verify-distribution) checks it is current.
BUNDLE_VERSION ?= 0.1.0
BUNDLE_IMAGE ?= coxswain:v$(BUNDLE_VERSION)
BUNDLE_CHANNELS ?= candidate
BUNDLE_DEFAULT_CHANNEL ?= candidate
BUNDLE_ARGS = -kustomize $(KUSTOMIZE) -version $(BUNDLE_VERSION) -image $(BUNDLE_IMAGE) \
	-channels $(BUNDLE_CHANNELS) -default-channel $(BUNDLE_DEFAULT_CHANNEL)

.PHONY: bundle
bundle: manifests kustomize ## Generate bundle/ (OLM registry+v1), bundle.Dockerfile and the chart's generated files from config/.
	go run ./hack/bundle $(BUNDLE_ARGS)

.PHONY: chart
chart: bundle ## Alias: the chart's crds/, files/ and templates/zz_generated.yaml are generated with the bundle.

.PHONY: verify-distribution
verify-distribution: manifests kustomize ## Fail when bundle/, bundle.Dockerfile or charts/coxswain's generated files are stale, or bundle/ does not validate.
	go run ./hack/bundle -check $(BUNDLE_ARGS)

BUNDLE_IMG ?= coxswain-bundle:v$(BUNDLE_VERSION)

.PHONY: bundle-build
bundle-build: ## Build the bundle image (needs a container engine).
	docker build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: helm-package
helm-package: helm ## Package charts/coxswain into dist/ with bin/helm.
	mkdir -p dist
	$(HELM) package charts/coxswain -d dist

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	docker push $(BUNDLE_IMG)

##@ Release

# The image repository a release runs (<IMAGE_REPO>:v<VERSION>).
IMAGE_REPO ?= ghcr.io/coxswain-go/coxswain
# VERSION always has a default (git describe) for everyday builds; a release
# takes it only when given on the command line or in the environment, so a
# forgotten VERSION is refused rather than released as a describe string.
RELEASE_VERSION = $(if $(filter command line environment environment override override,$(origin VERSION)),$(VERSION),)

.PHONY: release
release: manifests kustomize helm ## Write dist/release/vVERSION/: install.yaml, the linted chart .tgz, the OLM bundle (replaces the last release in hack/release/releases.txt) and the binary. make release VERSION=x.y.z
	go run ./hack/release -version "$(RELEASE_VERSION)" -image-repo "$(IMAGE_REPO)" -commit "$(COMMIT)" \
		-kustomize "$(KUSTOMIZE)" -helm "$(HELM)" -out dist/release

# `make test` also checks dist/install.yaml (internal/distribution applies it
# to envtest), so render it first; the release test packages the chart with
# the real helm CLI (exported as HELM), so build it first too.
test: build-installer bundle helm
