# The two set-up commands of the README:
#   make demo   bootstrap, build, and the main job on the embedded default
#   make test   bootstrap, build, and every Criterion suite through ctest
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build test demo sanitize clean

all: build

bootstrap:
	scripts/bootstrap

build: bootstrap
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	scripts/demo $(BUILD)

# AddressSanitizer + UndefinedBehaviorSanitizer build of every suite (CI runs it).
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DVT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

clean:
	rm -rf build build-asan
