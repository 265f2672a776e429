# The two set-up commands of the README:
#   make demo   bootstrap, build, and the main job on the embedded default
#   make test   bootstrap, build, and every Criterion suite through ctest
# CI (.ci/run) also runs: make release, make clang, make sanitize.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build test demo release clang sanitize clean

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

# Every suite built as Release (-O3).
release:
	$(MAKE) test BUILD=build-release CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Release"

# Every suite built by clang, and its captures compared bit for bit with the
# gcc build's (tests/test_builds.c; make test builds that one first).
clang:
	$(MAKE) build
	$(MAKE) test BUILD=build-clang CMAKE_FLAGS="-DCMAKE_C_COMPILER=clang -DVT_COMPARE_BIN=$(CURDIR)/build/vt"

# AddressSanitizer + UndefinedBehaviorSanitizer build of every suite (CI runs it).
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DVT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

clean:
	rm -rf build build-release build-clang build-asan
