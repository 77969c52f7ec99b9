# Allot — build, test and run a local cluster. `make help` lists the targets.
SHELL := /bin/bash
GO    ?= go
BIN   := bin

# Binaries: bin/<name> is built from the package in PKG_<name>. A binary is
# part of `make build` once its package has a main.go.
PKG_allot-governor     := ./governor
PKG_allotctl           := ./cli
PKG_nomad-device-accel := ./device-plugin
PKG_nomad-driver-ckpt  := ./task-driver
COMMANDS := allot-governor allotctl nomad-device-accel nomad-driver-ckpt
BINARIES := $(foreach c,$(COMMANDS),$(if $(wildcard $(PKG_$(c))/main.go),$(BIN)/$(c)))

# go-nvml's cgo preamble calls NVML functions its header marks deprecated;
# without this every build that compiles it prints a wall of gcc warnings.
# Go has no per-package cgo flags for a dependency, so every build and test
# started by make (and .ci/run) uses these C flags (Go's defaults plus one).
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

# Test settings; override on the command line, e.g. `make e2e RUN=Smoke`.
RUN          ?= .
E2E_TIMEOUT  ?= 30m
UNIT_TIMEOUT ?= 10m

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_%\/-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: $(BIN)/nomad $(BIN)/consul $(BINARIES) ## Build bin/nomad (Nomad v1.6.1), bin/consul (Consul v1.15.4) and every Allot binary

# Go's build cache decides what is stale, so the rule always runs go build.
$(BIN)/%: FORCE
	@mkdir -p $(BIN)
	$(GO) build -o $@ $(PKG_$*)

# Nomad v1.6.1 and Consul v1.15.4 (the HA tests' lock service) are built
# from their pinned modules, tools/nomad and tools/consul, and rebuilt only
# when those change.
$(BIN)/nomad $(BIN)/consul: $(BIN)/%: tools/%/go.mod tools/%/go.sum
	@mkdir -p $(BIN)
	@echo "==> building $* (pinned in tools/$*/go.mod) into $@ (several minutes the first time)"
	cd tools/$* && $(GO) build -o ../../$@ github.com/hashicorp/$*
	@$@ version | head -1

.PHONY: FORCE
FORCE:

.PHONY: test
test: check fuzz-short e2e ## Run make check (unit tests included), every fuzz target briefly, then the e2e tests against a real Nomad cluster

.PHONY: test-unit
test-unit: ## Run the unit tests (RACE=1: with the race detector)
	$(GO) test -count=1 $(if $(RACE),-race) -timeout $(UNIT_TIMEOUT) ./...

# make check: every static rule and the unit tests with the race detector.
# Each step is its own target, so `make staticcheck` etc. run alone too.
.PHONY: check
check: lint staticcheck boundaries tf-fmt ## gofmt, vet (both tags), staticcheck, import boundaries, terraform fmt, unit tests with -race
	@$(MAKE) --no-print-directory test-unit RACE=1

# staticcheck is pinned in its own module (tools/staticcheck) so its
# dependencies never touch the project's go.mod.
$(BIN)/staticcheck: tools/staticcheck/go.mod tools/staticcheck/go.sum
	@mkdir -p $(BIN)
	cd tools/staticcheck && $(GO) build -o ../../$@ honnef.co/go/tools/cmd/staticcheck

.PHONY: staticcheck
staticcheck: $(BIN)/staticcheck ## Run staticcheck (settings in staticcheck.conf), plain and e2e builds
	$(BIN)/staticcheck ./...
	$(BIN)/staticcheck -tags e2e ./...

.PHONY: boundaries
boundaries: ## Check which packages may import which (rules: internal/layers/rules.go)
	$(GO) test -count=1 -run '^TestRepository$$' ./internal/layers

# Terraform is optional on a developer's machine; CI sets TF_REQUIRED=1.
.PHONY: tf-fmt
tf-fmt: ## terraform fmt -check on terraform/ (skipped, loudly, without terraform unless TF_REQUIRED=1)
	@if command -v terraform >/dev/null; then \
		echo "terraform fmt -check -recursive terraform/"; terraform fmt -check -recursive terraform/; \
	elif [ -n "$(TF_REQUIRED)" ]; then echo "terraform not found and TF_REQUIRED is set"; exit 1; \
	else echo "!!! terraform not found: SKIPPING terraform fmt -check (install terraform to run it)"; fi

.PHONY: e2e
e2e: build ## Run the e2e tests (real Nomad cluster; RUN=<regexp> picks tests)
	$(GO) test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -run '^TestE2E.*$(RUN)' -skip '^TestE2E_SimFidelity' ./...
	@# The fidelity replays compare the real stack's waits with the
	@# simulator's: alone, so that another package's cluster (and browser)
	@# does not slow the real side (docs/simulator.md, fidelity).
	$(GO) test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -run '^TestE2E.*$(RUN)' ./governor/sim/

.PHONY: screenshots
screenshots: $(BIN)/nomad ## Save the console's screenshots to docs/img/console-*.png (browser e2e test, headless chromium)
	ALLOT_SCREENSHOTS=1 $(GO) test -count=1 -tags e2e -timeout 10m -run '^TestE2E_Console$$' ./governor/e2e/

# HA soak (docs/ha.md): the failover trials of TestE2E_HAFailover, HA_TRIALS
# of each kind (kill -9, SIGSTOP, cut off from Consul, SIGTERM).
HA_TRIALS    ?= 20
SOAK_TIMEOUT ?= 4h
.PHONY: soak
soak: build ## Run the HA failover trials many times (HA_TRIALS=<n> of each failure kind)
	HA_TRIALS=$(HA_TRIALS) $(GO) test -count=1 -tags e2e -timeout $(SOAK_TIMEOUT) -run '^TestE2E_HAFailover$$' -v ./governor/e2e/

# Fuzzing (docs/fuzzing.md): every `func FuzzXxx(f *testing.F)` in the
# module's test files, found with go list, one `go test -fuzz` run each.
# FUZZ=<regexp> picks targets by name, FUZZ_PARALLEL=<n> sets -parallel
# (default: GOMAXPROCS).
FUZZTIME       ?= 10m
FUZZTIME_SHORT ?= 3s
FUZZ           ?= .
FUZZ_PARALLEL  ?=

# fuzz_targets prints "<./package> <FuzzName>" per target.
define fuzz_targets
$(GO) list -e -f '{{$$d := .Dir}}{{range .TestGoFiles}}{{$$d}}/{{.}}{{"\n"}}{{end}}{{range .XTestGoFiles}}{{$$d}}/{{.}}{{"\n"}}{{end}}' ./... \
	| xargs -r grep -HoE '^func Fuzz[A-Za-z0-9_]*\([A-Za-z_]+ \*testing\.F\)' \
	| sed -E "s|^$$($(GO) list -m -f '{{.Dir}}')/(.*)/[^/]+:func (Fuzz[A-Za-z0-9_]*).*|./\1 \2|" \
	| sort -u | awk '$$2 ~ /$(FUZZ)/'
endef

# run_fuzz runs every target for $(1) and reports the ones that failed.
define run_fuzz
@set -o pipefail; targets=$$($(fuzz_targets)); \
if [ -z "$$targets" ]; then echo "no fuzz targets match FUZZ=$(FUZZ)"; exit 1; fi; \
failed=""; start=$$(date +%s); \
while read -r pkg name; do \
	echo "==> $$name ($$pkg, $(1))"; \
	fuzz_one() { $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(1) $(if $(FUZZ_PARALLEL),-parallel $(FUZZ_PARALLEL)) $$pkg 2>&1 | tee $$log; }; \
	log=$$(mktemp); \
	if ! fuzz_one; then \
		if grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
			echo "==> $$name: the fuzzing engine ran out of its own time (no failing input): once more"; \
			fuzz_one || failed="$$failed $$pkg:$$name"; \
		else failed="$$failed $$pkg:$$name"; fi; \
	fi; rm -f $$log; \
done <<< "$$targets"; \
echo "==> $$(wc -l <<< "$$targets") fuzz targets in $$(( $$(date +%s) - start ))s"; \
if [ -n "$$failed" ]; then echo "FAILED:$$failed (crashers are saved under each package's testdata/fuzz/)"; exit 1; fi
endef

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 10m; FUZZ=<regexp>, FUZZ_PARALLEL=<n>)
	$(call run_fuzz,$(FUZZTIME))

.PHONY: fuzz-short
fuzz-short: ## Run every fuzz target for FUZZTIME_SHORT each (default 3s; part of make test)
	$(call run_fuzz,$(FUZZTIME_SHORT))

.PHONY: fuzz-list
fuzz-list: ## List the fuzz targets (package and name)
	@$(fuzz_targets)

.PHONY: bench
bench: build bench-sim ## Run the benchmarks (results go in docs/benchmarks.md)
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: bench-sim
bench-sim: ## Regenerate the Simulator section of docs/benchmarks.md and its charts (allotctl sim report)
	$(GO) run ./cli sim report

.PHONY: lint
lint: ## Check formatting and run go vet (plain and e2e builds)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

.PHONY: fmt
fmt: ## Format the Go code
	gofmt -w $$(git ls-files '*.go')

.PHONY: dev
dev: build ## Build everything and run a local Nomad with Allot's plugins until Ctrl-C
	$(BIN)/allotctl dev up $(if $(HA),-ha)

.PHONY: clean
clean: ## Remove build outputs (keeps bin/nomad and bin/consul unless NOMAD=1)
	rm -rf .dev
	find $(BIN) -mindepth 1 $(if $(NOMAD),,! -name nomad ! -name consul) -delete 2>/dev/null || true
