# The two set-up commands of the README:
#   make demo   bootstrap, build, and the main job on the embedded default
#   make test   bootstrap, build, and every Criterion suite through ctest
# CI (.ci/run) also runs: make clang, make sanitize, make fuzz.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build test demo release clang sanitize fuzz clean

all: build

bootstrap:
	scripts/bootstrap

# The project's own builds treat warnings as errors (VT_WERROR); a plain
# cmake build does not.
build: bootstrap
	cmake -S . -B $(BUILD) -DVT_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j $(JOBS)

demo: build
	scripts/demo $(BUILD)

# Every suite built as Release (-O3), but the allocation-failure injection
# (make test runs it). make test's build compiles the GPU backend (hipcc);
# release, clang and sanitize leave it out: its device code does not change
# with the C compiler or its flags, and no test here runs it (no GPU).
release:
	$(MAKE) test BUILD=build-release CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Release -DVT_ALLOC_FAILURE_TESTS=OFF -DVT_HIP=off"

# Every suite built by clang as Release (-O3; but the allocation-failure
# injection, which make test runs), and its captures compared bit for bit
# with the gcc build's (tests/test_builds.c; make test builds that one
# first): another compiler and another optimisation level in one suite (CI
# runs this one, not make release, for its time).
clang:
	$(MAKE) build
	$(MAKE) test BUILD=build-clang CMAKE_FLAGS="-DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release -DVT_COMPARE_BIN=$(CURDIR)/build/vt -DVT_ALLOC_FAILURE_TESTS=OFF -DVT_HIP=off"

# AddressSanitizer + UndefinedBehaviorSanitizer build of every suite (CI runs it).
# Debug (assertions on) at -O1, as the sanitizers' own documentation advises:
# at -O0 the engine's loops made this suite the longest part of CI.
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DVT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-g\ -O1 -DVT_HIP=off"

# libFuzzer on every parser (fuzz/): each target SECONDS seconds, two at a
# time, from its kept corpus and fresh seeds that this checkout's vt (the
# gcc build) writes: a format changed since the corpus was kept is still
# fuzzed from valid inputs. CI runs it with SECONDS=60.
SECONDS ?= 60
fuzz: build
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DVT_FUZZ=ON -DVT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-fuzz -j $(JOBS) --target fuzz_all
	rm -rf build-fuzz/seeds
	fuzz/make_corpus.sh $(BUILD) build-fuzz/seeds
	fuzz/run.sh build-fuzz $(SECONDS)

clean:
	rm -rf build build-release build-clang build-asan build-fuzz
