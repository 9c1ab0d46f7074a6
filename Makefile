# One place for build flags: changing any CGO_* value invalidates Go's build
# cache and costs minutes of llama.cpp recompilation, so every target uses these.
SHELL := /bin/bash
# Which llama.cpp tact runs (docs/inference.md, One backend, two providers).
# By default the runtime: the pinned prebuilt llama.cpp libraries through
# tact's own binding (llm/llamalib), and tact builds without cgo. With
# CGO_LLAMA=1 the cgo provider instead: the llama.cpp that
# github.com/ollama/ollama v0.17.4 vendors, compiled in with the flags
# below (-tags cgollama). make test runs the backend's tests on both.
CGO_LLAMA ?=
ifeq ($(CGO_LLAMA),1)
export CGO_ENABLED := 1
GOTAGS := -tags cgollama
OTHER_CGO := 0
OTHER_TAGS :=
else
export CGO_ENABLED := 0
GOTAGS :=
OTHER_CGO := 1
OTHER_TAGS := -tags cgollama
endif
# The backend's packages whose tests run on the other provider too.
PROVIDER_PKGS := ./llm/llamacpp/ ./backends/
# AMX stays off: with it, -march=native on a CPU that has it (Sapphire
# Rapids and later) makes ggml-cpu.cpp call the AMX buffer type, whose
# source (ggml-cpu/amx/) no Go package of the binding compiles, so the link
# fails. The flags are no-ops on CPUs without AMX.
ifeq ($(PORTABLE),1)
ARCH_FLAGS := -march=x86-64-v3
else
ARCH_FLAGS := -march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
endif
# The cgo provider's flags (used only where CGO_ENABLED is 1).
export CGO_CFLAGS := -O3 $(ARCH_FLAGS)
export CGO_CXXFLAGS := -O3 $(ARCH_FLAGS)
export CGO_CPPFLAGS := -I$(CURDIR)/third_party/include
export CGO_LDFLAGS :=

GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/tactcli/tact/internal/buildinfo.Version=$(VERSION)
TEST_TIMEOUT ?= 30m

.PHONY: warm all build test test-short gotest fuzz bench vet fmt clean deps gpu demo ollama runtime runtime-native

all: build

# System packages (apt) the cgo build needs. Every target that compiles cgo
# depends on the stamp, so `make test` works on a fresh machine; once the
# packages are in, the stamp makes the check free. dpkg rewrites its status
# file on every install or removal, so removing a package later re-runs the
# script (a dpkg-query, silent when all are present).
DEPS_STAMP := bin/.deps-ok
DPKG_STATUS ?= $(wildcard /var/lib/dpkg/status)

deps: $(DEPS_STAMP)

$(DEPS_STAMP): scripts/install-deps.sh $(DPKG_STATUS)
	bash scripts/install-deps.sh
	@mkdir -p $(@D) && touch $@

build: $(DEPS_STAMP)
	$(GO) build $(GOTAGS) -ldflags '$(LDFLAGS)' -o bin/tact ./cmd/tact

# A real OpenAI-compatible server for the openai backend's end-to-end test
# and `make bench BENCHFLAGS='-only openai'`: ollama, a Go module tact already
# depends on, built once into a cache directory outside the repository (with
# the flags above, so its llama.cpp comes from Go's build cache). Tests find
# it through TACT_TEST_OLLAMA.
OLLAMA_VERSION := v0.17.4
OLLAMA_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tact/ollama-$(OLLAMA_VERSION)
OLLAMA := $(OLLAMA_DIR)/ollama
export TACT_TEST_OLLAMA := $(OLLAMA)

ollama: $(OLLAMA)

$(OLLAMA): | $(DEPS_STAMP)
	GOBIN=$(OLLAMA_DIR) CGO_ENABLED=1 $(GO) install github.com/ollama/ollama@$(OLLAMA_VERSION)

# The pinned llama.cpp runtime (docs/runtime.md), installed as the README's
# set-up promises: npm pack of the prebuilt package into a cache directory
# (once), then tact runtime install FILE, which checks it against the sha512
# pinned in llm/llamaruntime (a test keeps RUNTIME_PKG equal to that pin)
# and leaves an intact runtime alone. The tests load that runtime
# (TACT_RUNTIME_DIR, which llm/llamalib's tests read), whatever else is
# installed.
RUNTIME_PKG := @node-llama-cpp/linux-x64@3.22.1
RUNTIME_SRC_PKG := node-llama-cpp@3.22.1
RUNTIME_NPM_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tact/runtime-npm
RUNTIME_DIR := $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/tact/runtime/3.22.1
test test-short gotest: export TACT_RUNTIME_DIR := $(RUNTIME_DIR)

runtime: build
	@bash scripts/install-runtime.sh bin/tact $(RUNTIME_PKG) $(RUNTIME_NPM_DIR)

# llama.cpp built for this CPU from the source node-llama-cpp carries
# (minutes; needs cmake): tact then prefers it to the prebuilt runtime.
runtime-native: build
	@[ -f $(RUNTIME_NPM_DIR)/node-llama-cpp-3.22.1.tgz ] || { mkdir -p $(RUNTIME_NPM_DIR) && \
	  npm pack --silent --pack-destination $(RUNTIME_NPM_DIR) $(RUNTIME_SRC_PKG) >/dev/null; }
	bin/tact runtime build $(RUNTIME_NPM_DIR)/node-llama-cpp-3.22.1.tgz

# PKGS and TESTFLAGS narrow a run: make test PKGS=./tools/... TESTFLAGS='-run Foo -v'
PKGS ?= ./...
TESTFLAGS ?=

test: $(DEPS_STAMP) build $(OLLAMA) runtime
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet $(GOTAGS) $(PKGS)
	CGO_ENABLED=$(OTHER_CGO) $(GO) vet $(OTHER_TAGS) $(PROVIDER_PKGS) ./scripts/bench/
	$(GO) test $(GOTAGS) -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)
	@# The backend's tests on the other provider (one body of code, two
	@# llama.cpp's under it).
	CGO_ENABLED=$(OTHER_CGO) $(GO) test $(OTHER_TAGS) -timeout $(TEST_TIMEOUT) $(PROVIDER_PKGS)
	@# Concurrent runs on one executor and one runtime (on the tiny model:
	@# backends) and a suite's trials checked and run at once (testsuite, suiterun), under
	@# the race detector (which needs cgo).
	CGO_ENABLED=1 $(GO) test $(GOTAGS) -race -timeout $(TEST_TIMEOUT) -run 'Concurrent' ./react/ ./agent/ ./backends/ ./testsuite/ ./suiterun/ ./telemetry/

test-short: $(DEPS_STAMP) runtime
	$(GO) test $(GOTAGS) -short -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

# Run go test with the project's fixed flags, without building bin/tact first.
gotest: $(DEPS_STAMP) runtime
	$(GO) test $(GOTAGS) -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

vet: $(DEPS_STAMP)
	$(GO) vet $(GOTAGS) ./...
	CGO_ENABLED=$(OTHER_CGO) $(GO) vet $(OTHER_TAGS) $(PROVIDER_PKGS) ./scripts/bench/

fmt:
	gofmt -l -w .

clean:
	rm -rf bin

# Compile the cgo llama.cpp binding once so later builds hit the cache.
warm: $(DEPS_STAMP)
	CGO_ENABLED=1 $(GO) build github.com/ollama/ollama/llama github.com/ollama/ollama/fs/ggml

# Benchmark the embedded llama.cpp backend on a generated ~250M-parameter
# Q8_0 model (made once into ~/.cache/tact-test-models) and print a markdown
# report; e.g. BENCHFLAGS='-threads 4'. About 6-7 minutes on 2 idle cores.
# -only peers also runs tact on the other provider (a child go run).
BENCHFLAGS ?=
bench: $(DEPS_STAMP) $(OLLAMA) runtime
	$(GO) run $(GOTAGS) ./scripts/bench $(BENCHFLAGS)

# The first run on what ships with tact: the example plan without a model,
# the script backend, then a plan and run on a generated random-weight model
# (nonsense answers; the demo says how to get a real one). Unattended, offline,
# and it writes only under bin/.
DEMO_MODEL := bin/demo-tiny.gguf

$(DEMO_MODEL): $(DEPS_STAMP) $(wildcard scripts/synthmodel/*.go internal/synth/*.go)
	$(GO) run ./scripts/synthmodel -out $@ -size tiny -seed 1

demo: $(DEPS_STAMP) build runtime $(DEMO_MODEL)
	@bash scripts/demo.sh bin/tact $(DEMO_MODEL)
