# challenge-operator: build, generate, test and demo. Tool versions are pinned
# here and installed into ./bin; the Kubernetes control plane used by the tests
# and the demo is built once into a cache that survives fresh clones.

CONTROLLER_TOOLS_VERSION ?= v0.20.0
# The operator's version: the image tag, the bundle's CSV and dist/chart/Chart.yaml's
# version and appVersion (internal/installchart fails if the chart lags).
VERSION ?= 0.1.0
IMG ?= ghcr.io/challenge-operator/challenge-operator:v$(VERSION)
# Pinned so that `make bundle` reproduces byte for byte; bump it with VERSION.
BUNDLE_CREATED_AT ?= 2026-11-22T00:00:00Z
CHANNELS ?= stable,candidate

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# golangci-lint's version is pinned by hack/tools/golangci-lint/go.mod.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

GO_TEST_FLAGS ?= -count=1
SHELL := /usr/bin/env bash -o pipefail

.PHONY: all
all: build

##@ Development

# RBAC per install mode. controller-gen makes one role from every marker of
# the packages it reads, so the manager's ClusterRole (config/rbac) reads every
# package with +kubebuilder:rbac markers but internal/operator/nsperinstance,
# whose markers alone make the ClusterRole of config/namespace-per-instance
# (internal/bundle/rbac_test.go fails if a package with markers is read by
# neither or both). bundle-gen then splits the manager's ClusterRole by scope
# into the Role and ClusterRole of config/namespaced, and chart-gen writes the
# install chart's CRDs, RBAC, alerts, dashboard and values schema (dist/chart)
# from all of these. api-docs writes the API reference (docs/api.md) from the
# CRDs' schemas, whose descriptions are the API types' doc comments, and the
# flags of docs/operations.md from the binaries' flag sets.
.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD, webhook and RBAC manifests from the markers, the API reference and flags (docs/api.md, docs/operations.md) and the install chart's copies.
	$(CONTROLLER_GEN) crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/api-docs
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths="./internal/controller/...;./internal/operator" output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=namespace-per-instance-role paths="./internal/operator/nsperinstance" output:rbac:artifacts:config=config/namespace-per-instance
	$(CONTROLLER_GEN) rbac:roleName=instancer-role paths="./internal/instancer" output:rbac:artifacts:config=config/instancer
	$(CONTROLLER_GEN) rbac:roleName=self-monitoring-role paths="./internal/selfmonitor" output:rbac:artifacts:config=config/self-monitoring
	cp config/prometheus/monitor.yaml config/prometheus/rules.yaml internal/selfmonitor/
	go run ./hack/bundle-gen --namespaced-rbac
	go run ./hack/chart-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the deepcopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: docs
docs: ## Write the architecture page's layout (docs/architecture.md): every Go package by layer, the layers' picture; fails on an import the layers do not allow.
	go run ./hack/layout

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify
verify: manifests generate bundle docs lint ## Fail if gofmt, go vet, the linter or regeneration (code, manifests, the API reference and flags, bundle, the architecture page's layout) would change anything, or a build output is tracked.
	go test -count=1 -short -run 'TestNoBuildOutputIsTracked' ./test/shipping/
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
	@test -z "$$(git status --porcelain -- config api bundle bundle.Dockerfile dist internal/selfmonitor docs/api.md docs/operations.md docs/architecture.md)" || { echo "generated files are stale: run make generate manifests bundle docs"; git status --porcelain -- config api bundle bundle.Dockerfile dist internal/selfmonitor docs/api.md docs/operations.md docs/architecture.md; exit 1; }

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint v2 with .golangci.yml (part of verify).
	$(GOLANGCI_LINT) run ./...

# The instancer's API description (internal/instancer/openapi.json) against
# Redocly CLI's recommended rules, warnings included; the tests check every
# answer they read against the same document (internal/instancer).
.PHONY: lint-openapi
lint-openapi: ## Lint the instancer's openapi.json with Redocly CLI's recommended rules (the CLI pinned by hack/openapi-lint, installed with npm; Node.js with apt-get if missing).
	hack/openapi-lint.sh

.PHONY: test-bins
test-bins: ## Build what the tests run into the cache: the local control plane (kube-apiserver, etcd, controller-manager, scheduler, kwok), olm and promtool, 2 builds at a time; what is built already is kept.
	@hack/test-bins.sh >/dev/null

.PHONY: test
test: lint-openapi ## Lint openapi.json, verify and build the control plane (both at once), then run every test (fuzz seeds included) against it.
	$(MAKE) -j2 verify test-bins
	hack/chromium.sh
	KUBEBUILDER_ASSETS="$$(hack/test-bins.sh)" go test $(GO_TEST_FLAGS) ./...

FUZZTIME ?= 30s
.PHONY: test-faults
test-faults: test-bins ## Run the fault suite (test/faults) at full scale; FAULTS_REPORT=file.jsonl keeps the figures.
	CHALLENGE_FAULTS=full KUBEBUILDER_ASSETS="$$(hack/test-bins.sh)" go test -count=1 -v -timeout 90m ./test/faults/

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME.
	@for target in $$(grep -rhoE '^func (Fuzz[A-Za-z0-9_]+)' --include='*_test.go' internal api | sed 's/^func //'); do \
		pkg=$$(dirname $$(grep -rlE "^func $$target\(" --include='*_test.go' internal api)); \
		echo "fuzzing $$target in ./$$pkg for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) ./$$pkg || exit 1; \
	done

# Hours at the defaults (N = 100, 500, 1000; three systems; three repetitions;
# five idle minutes each): e.g. BENCH_ARGS="-n 100,500 -reps 1 -idle=false".
BENCH_ARGS ?=
.PHONY: bench
bench: test-bins ## Burst benchmark, ours vs stock helm-operator vs floor (BENCH_ARGS picks the mode): rewrites its section of docs/benchmarks.md and its .json.
	KUBEBUILDER_ASSETS="$$(hack/test-bins.sh)" go run ./hack/bench $(BENCH_ARGS)

.PHONY: bench-go
bench-go: test-bins ## Run the Go benchmarks of the packages.
	KUBEBUILDER_ASSETS="$$(hack/test-bins.sh)" go test -run '^$$' -bench . -benchmem ./...

##@ Build

.PHONY: bundle
bundle: manifests ## Generate the OLM bundle (bundle/, bundle.Dockerfile) for VERSION from config/manifests.
	go run ./hack/bundle-gen --version=$(VERSION) --image=$(IMG) --created-at=$(BUNDLE_CREATED_AT) --channels=$(CHANNELS)

.PHONY: bundle-build
bundle-build: ## Build the bundle image (needs a Docker engine).
	docker build -f bundle.Dockerfile -t $(subst challenge-operator:,challenge-operator-bundle:,$(IMG)) .

.PHONY: build
build: ## Build the manager binary.
	go build -o bin/manager .

.PHONY: run
run: manifests ## Run the operator against the current kubeconfig.
	go run . --watches-file=watches.yaml

.PHONY: demo
demo: ## Start a local control plane, run the operator and the samples (builds the control plane and kubectl, not the tests' olm and promtool).
	KUBEBUILDER_ASSETS="$$(hack/test-bins.sh --demo)" hack/demo.sh

.PHONY: docker-build
docker-build: ## Build the operator image (needs a Docker engine).
	docker build -t $(IMG) .

##@ Tools

$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	cd hack/tools/golangci-lint && GOFLAGS=-mod=mod go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
