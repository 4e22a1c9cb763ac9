# fastcnp: every day-to-day command is a target here. `make help` lists them.
SHELL := /bin/bash
GO ?= go
# Packages under test; the race detector is on by default because the runtimes are concurrent.
PKGS ?= ./...
TEST_FLAGS ?= -race -count=1 -timeout 20m
BENCH ?= .
BENCH_PKGS ?= ./...

.PHONY: help setup build test test-short lint proto proto-check bench fuzz fuzz-sim p4 demo sim-demo sim-s3 clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## install Debian packages and pinned Go tools (fresh Debian 12, as root)
	bash scripts/setup.sh

build: ## build every command into bin/
	mkdir -p bin
	$(GO) build -o bin/ ./cmd/...

test: lint ## lint, then run all tests (root runs the network-namespace tests too)
	$(GO) test $(TEST_FLAGS) $(PKGS)
	# The simulator's long runs skip under -race (one goroutine): again without it.
	$(GO) test -count=1 -run 'TestConvergence' ./sim/network/
	# The committed LSTM weights are what their recorded command makes (simulates S2: skips under -race).
	$(GO) test -count=1 -run 'TestCommittedWeightsReproduce' ./cmd/fastcnp-train/

test-short: ## quick tests only (no network namespaces, no long runs)
	$(GO) test -short -count=1 $(PKGS)

lint: proto-check ## gofmt, go vet, and generated code up to date
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$') $$(git ls-files --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

proto: ## regenerate Go from proto/: P4Runtime and fastcnp API (pinned protoc + plugins, see scripts/setup.sh)
	bash proto/gen.sh
	bash proto/fastcnp/gen.sh

proto-check: ## fail unless regenerating both proto trees is byte-identical to the files in the tree
	@bash proto/check.sh

bench: ## run the Go benchmarks (BENCH=regexp, BENCH_PKGS=packages)
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem $(BENCH_PKGS)

fuzz: ## fuzz the packet parser for FUZZTIME (default 60s)
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $${FUZZTIME:-60s} ./wire/

fuzz-sim: ## fuzz the simulator's file parsers (sim/hpcc), FUZZTIME each (default 30s)
	@for f in FuzzParseTopology FuzzParseFlows FuzzParseConfig FuzzParseOutputs; do \
	  $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-30s} ./sim/hpcc/ || exit 1; done

p4: ## compile every P4 profile with a compiler present (v1model: p4c-bm2-ss; tofino, tofino2: p4c-barefoot) and compare each P4Info
	bash p4src/build.sh

demo: ## the main job: S1 victim flow, ecn vs fastcnp, side by side
	@if [ -x scripts/demo.sh ]; then bash scripts/demo.sh; else echo "make demo: not yet available (the testbed issue adds it)"; fi

sim-demo: ## fastcnp-sim at 100 Gb/s: S1, S1 with commodity senders and S2 (scaled) in dcqcn, fastcnp and the ablation, side by side
	$(GO) run ./cmd/fastcnp-sim demo $(if $(SIM_OUT),--out $(SIM_OUT))

S3_DURATION ?= 10ms
S3_LOADS ?= 0.3,0.5
S3_OUT ?= /tmp/fastcnp-s3
sim-s3: ## spec 06 S3: fat tree, WebSearch and FB_Hadoop at S3_LOADS with 60 x 500 KB incasts, dcqcn, fastcnp, ablation (S3_DURATION, S3_STOP_AFTER, S3_OUT)
	$(GO) run ./cmd/fastcnp-sim sweep --modes dcqcn,fastcnp,fastcnp-no-pfc-state \
	  --workload websearch=sim/data/hpcc/WebSearch_distribution.txt --workload fbhdp=sim/data/hpcc/FbHdp_distribution.txt \
	  --loads $(S3_LOADS) --seeds 1 --topology sim/data/hpcc/fat.txt --config docs/results/sim/s3/params.txt \
	  --duration $(S3_DURATION) --incast 60x500KB@0.02 $(if $(S3_STOP_AFTER),--stop-after $(S3_STOP_AFTER)) --out $(S3_OUT)

clean: ## remove build outputs
	rm -rf bin p4src/build
