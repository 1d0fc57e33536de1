# The README's two commands:
#   make demo   installs missing dependencies, builds, and runs the main job on its default
#   make test   installs missing dependencies, builds, and runs the whole suite (CTest)
# Also (docs/testing.md says what each covers and how long it takes):
#   make sanitize  every layer, the CLI, examples and tests/ under AddressSanitizer +
#                  UndefinedBehaviorSanitizer (clang, build-asan), then each fuzzer of fuzz/
#                  for FUZZ_SECONDS (default 25) when fuzz/run.sh exists
#   make fuzz      the same build, fuzzers only: make fuzz FUZZ_SECONDS=600 for a long run
#   make tsan      the tests that use threads under ThreadSanitizer (clang, build-tsan)
#   make kill-resume  tests/kill_resume_test at length: KILLS (default 60) SIGKILLs a run
#                  at random times (KILL_SEED), each resumed; CI's run kills 6 times
#   make bench     benchmarks against PyTorch, figures go to bench/RESULTS.md
#   make tidy      clang-tidy (.clang-tidy) over every library source, one run per source;
#                  TIDY_FLAGS=--batches runs it per unity batch, as CI does (scripts/tidy.sh)
# CI (.ci/run) runs scripts/check-format.sh, make test (CMAKE_FLAGS=-DLOOM_WERROR=ON),
# make tidy TIDY_FLAGS=--batches, make sanitize and make tsan on a clean clone.
BUILD ?= build
SAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# Unity builds (CMake's UNITY_BUILD: 8 sources of a target compiled as one): the headers
# (protobuf, GoogleTest, the layers') are parsed once per batch instead of once per file.
# Under ASan at -O0 the estimator library compiles in a quarter of the CPU time
# (docs/testing.md). UNITY=OFF builds file by file, as a plain `cmake` configure does.
UNITY ?= ON
# The sanitizer builds use clang: it compiles the instrumented code faster than g++ 12
# (docs/testing.md has the measurement) and is the compiler libFuzzer needs, so the one
# ASan + UBSan build also yields the fuzzers.
SAN_CXX ?= clang++
FUZZ_SECONDS ?= 25
space := $() $()

.PHONY: deps build demo test bench sanitize sanitize-build fuzz tsan tidy kill-resume clean

deps:
	scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) $(CMAKE_FLAGS)
	ninja -C $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/loom/cli/loom demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# ASan + UBSan over every layer, the CLI, examples and tests/ (bench/ is measured, not
# tested). -O0 -g0: instrumented -O1 compiles take about twice as long and the build, not
# the tests, dominates CI's time; -g0 still gives symbolized stacks (function names).
# With fuzz/ present (its CMakeLists.txt defines LOOM_FUZZ) the same build compiles the
# fuzz_<name> harnesses. Tests labelled "slow" (2 GiB graphs) stay out.
SAN_SKIP ?= bench
SAN_FUZZ := $(if $(wildcard fuzz/CMakeLists.txt),-DLOOM_FUZZ=ON)
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
sanitize-build: deps
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=$(SAN_CXX) \
	  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
	  -DLOOM_SANITIZE=ON $(SAN_FUZZ) -DLOOM_SKIP_DIRS="$(SAN_SKIP)" \
	  -DCMAKE_UNITY_BUILD=$(UNITY) $(CMAKE_FLAGS)
	ninja -C $(SAN_BUILD) -j $(JOBS)

sanitize: sanitize-build
	cd $(SAN_BUILD) && $(SAN_ENV) ctest --output-on-failure -j $(JOBS) -LE slow
	@if [ -x fuzz/run.sh ]; then $(SAN_ENV) fuzz/run.sh $(SAN_BUILD) $(FUZZ_SECONDS); \
	 else echo "sanitize: no fuzz/run.sh, no fuzzers to run"; fi

fuzz: sanitize-build
	@if [ -x fuzz/run.sh ]; then $(SAN_ENV) fuzz/run.sh $(SAN_BUILD) $(FUZZ_SECONDS); \
	 else echo "fuzz: no fuzz/run.sh in this checkout"; exit 1; fi

# ThreadSanitizer over the tests whose code runs on more than one thread: the thread
# pool (base), the session's intra-op pool and a variable written from another thread
# (runtime), Map / Prefetch / Interleave workers (data), hooks and MonitoredSession
# (train), the estimator. Only the layers they need are configured and only these test
# binaries built, at -O1 (TSan at -O0 runs several times slower). .ci/tsan.supp silences
# third-party code only (each entry says why).
TSAN_SKIP ?= loom/cli;examples;bench;tests
TSAN_TESTS ?= base_test runtime_test runtime_while_test data_test data_threads_test train_runtime_test train_bf16_weights_test estimator_test
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/.ci/tsan.supp"
tsan: deps
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=$(SAN_CXX) \
	  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
	  -DLOOM_TSAN=ON -DLOOM_SKIP_DIRS="$(TSAN_SKIP)" -DCMAKE_UNITY_BUILD=$(UNITY) \
	  $(CMAKE_FLAGS)
	ninja -C $(TSAN_BUILD) -j $(JOBS) $(TSAN_TESTS)
	cd $(TSAN_BUILD) && $(TSAN_ENV) ctest --output-on-failure -j $(JOBS) -LE slow \
	  -R '^($(subst $(space),|,$(strip $(TSAN_TESTS))))$$'

# Random kill/resume at length (tests/kill_resume_test.cc): a trainer over an array
# pipeline and one over TFRecord files (interleave, parse, map, cache, shuffle, batch,
# prefetch) is SIGKILLed KILLS times at random moments and resumed each time; the final
# checkpoint and every step's examples must equal an uninterrupted run's.
KILLS ?= 60
KILL_SEED ?= 20261203
kill-resume: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) $(CMAKE_FLAGS)
	ninja -C $(BUILD) -j $(JOBS) kill_resume_test
	LOOM_KILL_RESUME_KILLS=$(KILLS) LOOM_KILL_RESUME_SEED=$(KILL_SEED) $(BUILD)/tests/kill_resume_test

# clang-tidy over $(BUILD)'s compile commands: configured as `make build` does (nothing is
# compiled; tidy.sh generates the protobuf headers). TIDY_FLAGS: scripts/tidy.sh's options
# (--batches, --all, or files).
TIDY_FLAGS ?=
tidy: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) $(CMAKE_FLAGS)
	scripts/tidy.sh -p $(BUILD) -j $(JOBS) $(TIDY_FLAGS)

bench:
	scripts/install-deps.sh --bench
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) $(CMAKE_FLAGS)
	ninja -C $(BUILD) -j $(JOBS)
	bench/run_all.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD)
