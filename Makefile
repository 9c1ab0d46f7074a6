# One place for build flags: changing any CGO_* value invalidates Go's build
# cache and costs minutes of llama.cpp recompilation, so every target uses these.
SHELL := /bin/bash
ifeq ($(PORTABLE),1)
ARCH_FLAGS := -march=x86-64-v3
else
ARCH_FLAGS := -march=native
endif
export CGO_ENABLED := 1
export CGO_CFLAGS := -O3 $(ARCH_FLAGS)
export CGO_CXXFLAGS := -O3 $(ARCH_FLAGS)
export CGO_CPPFLAGS := -I$(CURDIR)/third_party/include
export CGO_LDFLAGS :=

GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/tactcli/tact/internal/buildinfo.Version=$(VERSION)
TEST_TIMEOUT ?= 30m

.PHONY: warm all build test test-short gotest fuzz bench vet fmt clean deps gpu

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/tact ./cmd/tact

# PKGS and TESTFLAGS narrow a run: make test PKGS=./exec/... TESTFLAGS='-run Foo -v'
PKGS ?= ./...
TESTFLAGS ?=

test: build
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

test-short:
	$(GO) test -short -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

# Run go test with the project's fixed cgo flags, without building bin/tact first.
gotest:
	$(GO) test -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w .

clean:
	rm -rf bin

# Compile the cgo llama.cpp binding once so later builds hit the cache.
warm:
	$(GO) build github.com/ollama/ollama/llama github.com/ollama/ollama/fs/ggml

# Benchmark the embedded llama.cpp backend on a generated ~250M-parameter
# Q8_0 model (made once into ~/.cache/tact-test-models) and print a markdown
# report; e.g. BENCHFLAGS='-threads 4'. About 6-7 minutes on 2 idle cores.
BENCHFLAGS ?=
bench:
	$(GO) run ./scripts/bench $(BENCHFLAGS)
