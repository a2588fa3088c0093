# kerntune — build, tune, test, check.
GO      ?= go
PYTHON  ?= python3
BIN     ?= bin/kerntune
BUDGET  ?= 6m
PKGS    := ./...
# The commit, for kerntune version where Go records no VCS data itself.
LDFLAGS := -X main.commit=$(shell git rev-parse HEAD 2>/dev/null)

.PHONY: build tune test test-go test-go-race test-go-norace test-full test-python test-short test-arm64-abi check check-generated check-shell fuzz bench release clean gpu-binaries search-table

build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kerntune

# Tune every family and shape class of the default workload on the
# auto-picked device and merge the results into hardware_params.json.
tune: build
	./$(BIN) tune --budget $(BUDGET) --extend
	./$(BIN) show

# The test suite (about 6 minutes on 2 cores): Go, then the Python
# loader's tests (the conformance suite both loaders run,
# params/testdata/conformance). The race detector runs on every package but
# those of NORACE, whose tests are single-threaded and CPU-bound (code
# generation, clang and g++ over generated sources), where it only
# multiplies the time. The sweeps over every candidate (MSL through clang,
# MSL computed by the emulation, OpenCL on PoCL) run a covering sample here;
# make test-full runs them whole (the emulation: every pair of values).
# TIMEOUT is go test's -timeout, a hang detector: the longest package
# (kernels/gpu) takes about 4 minutes on a quiet 2-core machine and 13 with
# two busy processes and the race-detector run beside it, so 30 minutes
# leaves room for a slower or busier machine.
TIMEOUT ?= 30m
NORACE  := ./kernels/gpu
test: test-go test-python

# One after the other: both are CPU-bound, so running them at once on a
# small machine only stretched each package's wall time toward TIMEOUT
# and added their memory peaks (the longest package first).
test-go:
	@$(MAKE) --no-print-directory test-go-norace
	@$(MAKE) --no-print-directory test-go-race

test-go-race:
	$(GO) test -race -count=1 -timeout $(TIMEOUT) $$($(GO) list $(PKGS) | grep -v -x -F "$$($(GO) list $(NORACE))")

test-go-norace:
	$(GO) test -count=1 -timeout $(TIMEOUT) $(NORACE)

# The whole sweeps make test samples, with the time they took: every Metal
# candidate through both clang checks (about 4 minutes on 2 cores), the MSL
# emulation on a sample of every pair of parameter values (about 6 minutes), every
# OpenCL candidate verified on the OpenCL device (PoCL off a GPU machine) in
# one process per core (seven to nine hours on 2 cores). OPENCL_PART=I/N
# verifies the I-th of every N OpenCL candidates only (CI: a 48th);
# see scripts/test-full.sh.
test-full:
	GO=$(GO) scripts/test-full.sh

test-python:
	PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m unittest discover -s python/tests

test-short:
	$(GO) test -short -count=1 $(PKGS)

# The Metal backend's tests, its purego struct-by-value ABI test
# (tuner/metal/abi_test.go) above all, built for linux/arm64 and run under
# qemu-user: the arm64 calling convention darwin/arm64 shares for these
# calls (MTLSize by reference, returned through x8). The test compiles its C
# half with $$CC. Needs qemu-user, gcc-aarch64-linux-gnu and
# libc6-dev-arm64-cross (Debian); fails if the ABI test did not run.
ARM64_SYSROOT ?= /usr/aarch64-linux-gnu
ARM64_CC      ?= aarch64-linux-gnu-gcc
test-arm64-abi:
	@mkdir -p bin
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) test -c -o bin/metal-linux-arm64.test ./tuner/metal
	cd tuner/metal && CC=$(ARM64_CC) KTDEV_REQUIRE_CC=1 qemu-aarch64 -L $(ARM64_SYSROOT) \
		../../bin/metal-linux-arm64.test -test.count=1 -test.v > ../../bin/metal-linux-arm64.log 2>&1; \
		rc=$$?; cat ../../bin/metal-linux-arm64.log; [ $$rc -eq 0 ] || exit $$rc; \
		grep -q -- '^--- PASS: TestTypedSendABI' ../../bin/metal-linux-arm64.log || { echo "TestTypedSendABI did not pass on linux/arm64"; exit 1; }

# Formatting, vet, the generated CPU kernels up to date, the shell scripts,
# and cross-builds for the other platforms.
check: check-generated check-shell
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(PKGS)
	GOOS=darwin GOARCH=amd64 CGO_ENABLED=0 $(GO) vet $(PKGS)
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/kerntune
	GOOS=darwin GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/kerntune

# Fails when a tracked shell script does not parse, or ends a pipeline in
# grep -q or head under errexit and pipefail (see the script).
check-shell:
	scripts/check-shell.sh

# Fails when tuner/cpu's generated kernels (kern_gemm_micro.go,
# kern_*_kernels.go) differ from what tuner/cpu/kern_gen.go writes now.
check-generated:
	GO=$(GO) scripts/check-generated.sh

fuzz:
	$(GO) test ./params -run '^$$' -fuzz FuzzLoad -fuzztime 60s

bench:
	$(GO) test ./tuner/cpu -run '^$$' -bench . -benchtime 5x

release:
	@for p in linux/amd64 linux/arm64 darwin/arm64 darwin/amd64; do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "building dist/kerntune-$$os-$$arch"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o dist/kerntune-$$os-$$arch ./cmd/kerntune || exit 1; \
	done

clean:
	rm -rf bin dist

# Binaries for a GPU machine without Go: the CLI, the driver smoke test and
# the GEMM templates of scripts/gemm_xcheck.py.
gpu-binaries:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o bin/kerntune ./cmd/kerntune
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) test -c -o bin/cudadrv.test ./internal/cudadrv
	$(GO) run ./scripts/gemmsrc bin/gemm-src

# The strategy table of docs/results/search-strategies.md, replayed on the Kernel Tuner caches
# (KT_CACHES, default ../shared/testdata/kerneltuner).
KT_CACHES ?= ../shared/testdata/kerneltuner
search-table:
	scripts/search-table.sh $(KT_CACHES)
