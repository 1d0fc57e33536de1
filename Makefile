# The README's two commands:
#   make demo   installs missing dependencies, builds, and runs the main job on its default
#   make test   installs missing dependencies, builds, and runs the whole suite (CTest)
# Also: make bench (benchmarks against PyTorch, figures go to bench/RESULTS.md),
#       make sanitize (the suite under AddressSanitizer + UndefinedBehaviorSanitizer).
BUILD ?= build
SAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps build demo test bench sanitize clean

deps:
	scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	ninja -C $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/loom/cli/loom demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The sanitizer pass covers the engine, data and training layers (examples, the CLI and the
# estimator suite run in `make test`), at -O0: instrumented -O1 compiles took twice as long
# (52 s vs 28 s for ops/reduce.cc) and the build, not the tests, dominates CI's time.
SAN_SKIP ?= loom/estimator;loom/cli;examples;bench;tests
sanitize: deps
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
	  -DLOOM_SANITIZE=ON -DLOOM_SKIP_DIRS="$(SAN_SKIP)"
	ninja -C $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE slow

bench:
	scripts/install-deps.sh --bench
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	ninja -C $(BUILD) -j $(JOBS)
	bench/run_all.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
