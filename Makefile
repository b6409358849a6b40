# ishmem: a thin wrapper over cargo (the library and tools) and CMake/ctest (the C suite).
#   make                      build libishmem.so, ishmrun, ishmem-info (release)
#   make install PREFIX=dir   install lib/, include/, bin/, pkg-config and CMake files
#   make check-sockets        only the fabric-mode runs over the sockets provider
#   make check-python         shmem4py 1.0.0 from PyPI built against the install, its own test
#                             suite under ishmrun and mpirun at 1, 2 and 4 PEs (needs PyPI)
#   make check                generated-file check, Rust tests, C test suite (ctest), the CUDA
#                             backend on a mock libcuda (scripts/mock-gpu-check.sh), then a
#                             summary whose last line is the verdict (scripts/check.sh)
#   scripts/gpu-check.sh      the CUDA backend on a GPU machine (no cargo needed there)
#   make check-asan           the Rust unit tests and the C suite under ASan+UBSan (+LSan)
#   make check-tsan           the threaded C tests under ThreadSanitizer (scripts/sanitize-check.sh)
#   make fuzz-args            random invalid arguments: 1,000 jobs under ishmrun, 500 under
#                             mpirun and 500 under mpiexec (FUZZ_JOBS=1000)
#   make run-example NP=4     build examples/hello.c against the install and run it on NP PEs
#   make soak                 the 10-minute soak at 4 PEs under ishmrun, mpirun and mpiexec
#   make reliability          soak, fabric soak, faults, 1,000 init/finalize jobs, long stress
#                             (scripts/reliability.sh; figures in docs/RELIABILITY.md)
#   make check-mutations      library variants with one semantic removed each (quiet, fence,
#                             nbi get, AMO, barrier, signal, wait, team sync, GPU proxy quiet),
#                             each run against the tests that cover it, one node and across
#                             pretend nodes; fails unless every one is caught
#                             (scripts/mutation-check.sh, docs/RELIABILITY.md)
#   make check-scale          the host tests (RMA, AMO, signals, waits, teams, collectives) at
#                             16, 32 and 64 PEs on 8, 16 and 32 pretend nodes under ishmrun and
#                             srun, then the scale measurements (scripts/scale-check.sh,
#                             docs/SCALING.md); slow on a small machine, not in `check`
#   make generate             rewrite the generated files from the tables

PREFIX ?= $(CURDIR)/build/prefix
NP ?= 4
CARGO ?= cargo
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
SOVERSION := $(shell sed -n 's/^soversion = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
CTEST_ARGS ?= --output-on-failure

.PHONY: all build install check check-sockets check-generated test-rust test-c test-gpu-mock run-example generate clean \
	soak reliability test-c-build check-asan check-tsan fuzz-args check-mutations check-scale check-python

all: build

build:
	$(CARGO) build --release --workspace
	@# the soname is libishmem.so.$(SOVERSION): programs linked against target/release find it
	ln -sf libishmem.so target/release/libishmem.so.$(SOVERSION)

generate:
	$(CARGO) run -q -p ishmem-gen

check-generated:
	$(CARGO) run -q -p ishmem-gen -- --check
	scripts/gen-ptx.sh --check

install: build
	scripts/install-prefix.sh $(PREFIX)

test-rust:
	$(CARGO) test --release --workspace

test-c: install
	cmake -S tests -B build/tests -DCMAKE_PREFIX_PATH=$(PREFIX) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build/tests -j 2
	cd build/tests && ctest $(CTEST_ARGS)

# shmem4py 1.0.0 (PyPI) built unchanged against the install, its test suite under ishmrun and
# mpirun at 1, 2 and 4 PEs (scripts/python-check.sh; needs python3-venv and PyPI).
check-python: install
	scripts/python-check.sh $(PREFIX) build/python-check

# Only the fabric-mode runs over libfabric's sockets provider (`check` runs them too).
check-sockets: install
	cmake -S tests -B build/tests-sockets -DCMAKE_PREFIX_PATH=$(PREFIX) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DISHMEM_TEST_SOCKETS=ON
	cmake --build build/tests-sockets -j 2
	cd build/tests-sockets && ctest -L fabric -R fabric_sockets $(CTEST_ARGS)

# The CUDA backend's host side against a stand-in libcuda (no GPU needed).
test-gpu-mock: build
	scripts/mock-gpu-check.sh

# Every stage runs even when one fails; a summary (counts, skip reasons) ends the output, its
# last line `make check: PASSED` or `make check: FAILED: <stages>` (scripts/check.sh).
check:
	@MAKE="$(MAKE)" scripts/check.sh

# The long reliability runs (not in `check`): they use the suite's build (build/tests).
soak: test-c-build
	scripts/reliability.sh soak 600 4

reliability: test-c-build
	scripts/reliability.sh all

test-c-build: install
	cmake -S tests -B build/tests -DCMAKE_PREFIX_PATH=$(PREFIX) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build/tests -j 2

# Sanitizers (docs/RELIABILITY.md): the library, ishmrun and the C suite rebuilt with them under
# build/asan, build/tsan (RUSTC_BOOTSTRAP=1 on the stable toolchain); any report fails the run.
# SAN_CTEST_ARGS picks the ctest subset (check-asan: the whole suite by default).
check-asan:
	scripts/sanitize-check.sh asan

check-tsan:
	scripts/sanitize-check.sh tsan

# Mutation check (issue 26): every mutant of scripts/mutation-check.sh's table must be killed.
check-mutations:
	MAKE="$(MAKE)" scripts/mutation-check.sh

# Scale (issue 29): SCALE_SIZES, SCALE_PROGS, SCALE_LAUNCHERS pick a subset (scale-check.sh).
check-scale: test-c-build
	scripts/scale-check.sh all

# Fuzzed bad arguments, longer than the suite's fuzz_args tests: FUZZ_JOBS seeds per launcher.
FUZZ_JOBS ?= 1000
fuzz-args: install
	cmake -S tests -B build/tests -DCMAKE_PREFIX_PATH=$(PREFIX) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build/tests --target fuzz_args
	tests/scripts/fuzz_args.sh -n $(FUZZ_JOBS) -s 1 build/tests/fuzz_args $(PREFIX)/bin/ishmrun --timeout 60 -n 3
	tests/scripts/fuzz_args.sh -n $$(( $(FUZZ_JOBS) / 2 )) -s 100001 build/tests/fuzz_args mpirun.openmpi --allow-run-as-root --oversubscribe -np 2
	tests/scripts/fuzz_args.sh -n $$(( $(FUZZ_JOBS) / 2 )) -s 200001 build/tests/fuzz_args mpiexec.mpich -n 2

run-example: install
	install -d build/example
	cc -O2 -Wall -Wextra examples/hello.c $$(PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig pkg-config --cflags --libs ishmem) -o build/example/hello
	$(PREFIX)/bin/ishmrun -n $(NP) build/example/hello

clean:
	$(CARGO) clean
	rm -rf build
