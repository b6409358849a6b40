#!/bin/sh
# Installs an already built libishmem (target/release) into a prefix: the library, headers,
# ishmrun, ishmem-info, pkg-config and CMake files, docs. Needs no cargo, so it also runs on a
# machine that only received the build (the GPU machine: scripts/gpu-check.sh).
#   scripts/install-prefix.sh PREFIX [BUILD_DIR]     (BUILD_DIR: default target/release)
# `make install` builds, then runs this.
set -eu
cd "$(dirname "$0")/.."
PREFIX=${1:?usage: scripts/install-prefix.sh PREFIX [BUILD_DIR]}
BUILD=${2:-target/release}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
for f in libishmem.so ishmrun ishmem-info; do
    [ -f "$BUILD/$f" ] || { echo "install-prefix: $BUILD/$f is missing (build first: make build)" >&2; exit 1; }
done
install -d "$PREFIX/lib/pkgconfig" "$PREFIX/lib/cmake/ishmem" "$PREFIX/include/ishmem" "$PREFIX/bin" "$PREFIX/share/doc/ishmem"
install -m 755 "$BUILD/libishmem.so" "$PREFIX/lib/"
install -m 644 include/ishmem.h include/ishmemx.h "$PREFIX/include/"
install -m 644 include/ishmem/*.h include/ishmem/*.cuh "$PREFIX/include/ishmem/"
install -m 755 "$BUILD/ishmrun" "$BUILD/ishmem-info" "$PREFIX/bin/"
sed "s|@VERSION@|$VERSION|g" cmake/ishmem.pc.in > "$PREFIX/lib/pkgconfig/ishmem.pc"
install -m 644 cmake/ishmemConfig.cmake "$PREFIX/lib/cmake/ishmem/"
sed "s|@VERSION@|$VERSION|g" cmake/ishmemConfigVersion.cmake.in > "$PREFIX/lib/cmake/ishmem/ishmemConfigVersion.cmake"
install -m 644 README.md docs/ENV.md "$PREFIX/share/doc/ishmem/"
install -m 644 abi/symbols.txt "$PREFIX/share/doc/ishmem/symbols.txt"
