#!/bin/sh
# Installs an already built libishmem (target/release) into a prefix: the library (versioned,
# stripped, its debug info in lib/.debug/), headers (ishmem.h, ishmemx.h, and shmem.h, shmemx.h
# for OpenSHMEM programs), ishmrun, ishmem-info, the ishmemcc and ishmemc++ compiler wrappers
# (also named ishmem-oshcc and ishmem-oshc++), pkg-config and CMake files, the documentation
# (README.md and docs/ with every file they link to, under share/doc/ishmem) and man pages. Needs no cargo,
# so it also runs on a machine that only received the build (the GPU machine:
# scripts/gpu-check.sh).
#   scripts/install-prefix.sh PREFIX [BUILD_DIR]     (BUILD_DIR: default target/release)
# `make install` builds, then runs this. STRIP=0 keeps the debug info in the installed files.
set -eu
cd "$(dirname "$0")/.."
PREFIX=${1:?usage: scripts/install-prefix.sh PREFIX [BUILD_DIR]}
BUILD=${2:-target/release}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
# The ABI version: the soname is libishmem.so.$SOVERSION (build.rs reads the same line).
SOVERSION=$(sed -n 's/^soversion = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
[ -n "$SOVERSION" ] || { echo "install-prefix: no soversion in Cargo.toml" >&2; exit 1; }
# The file: libishmem.so.SOVERSION.MINOR.PATCH of the release (0.1.0 -> libishmem.so.1.1.0).
REALNAME=libishmem.so.$SOVERSION.${VERSION#*.}
for f in libishmem.so ishmrun ishmem-info; do
    [ -f "$BUILD/$f" ] || { echo "install-prefix: $BUILD/$f is missing (build first: make build)" >&2; exit 1; }
done
install -d "$PREFIX/lib/pkgconfig" "$PREFIX/lib/cmake/ishmem" "$PREFIX/include/ishmem" "$PREFIX/bin" \
    "$PREFIX/share/doc/ishmem" "$PREFIX/share/man/man1"

# ---- library and tools, stripped; debug info kept beside them in .debug/ (gdb finds it) ----
rm -f "$PREFIX/lib/libishmem.so" "$PREFIX/lib/libishmem.so.$SOVERSION" "$PREFIX"/lib/libishmem.so.*.*
install -m 755 "$BUILD/libishmem.so" "$PREFIX/lib/$REALNAME"
ln -s "$REALNAME" "$PREFIX/lib/libishmem.so.$SOVERSION"
ln -s "libishmem.so.$SOVERSION" "$PREFIX/lib/libishmem.so"
install -m 755 "$BUILD/ishmrun" "$BUILD/ishmem-info" "$PREFIX/bin/"
# strip_keep DIR FILE: moves FILE's debug info to DIR/.debug/FILE.debug and strips FILE.
strip_keep() {
    dir=$1
    file=$2
    install -d "$dir/.debug"
    objcopy --only-keep-debug "$dir/$file" "$dir/.debug/$file.debug"
    chmod 644 "$dir/.debug/$file.debug"
    strip --strip-unneeded "$dir/$file"
    (cd "$dir" && objcopy --add-gnu-debuglink=".debug/$file.debug" "$file")
}
if [ "${STRIP:-1}" = 0 ]; then
    echo "install-prefix: STRIP=0: the library and tools keep their debug info"
elif command -v strip >/dev/null 2>&1 && command -v objcopy >/dev/null 2>&1; then
    strip_keep "$PREFIX/lib" "$REALNAME"
    strip_keep "$PREFIX/bin" ishmrun
    strip_keep "$PREFIX/bin" ishmem-info
else
    echo "install-prefix: strip/objcopy (binutils) not found: the library and tools are installed unstripped" >&2
fi

# ---- compiler wrappers ----
install -m 755 scripts/ishmemcc "$PREFIX/bin/ishmemcc"
# ishmem-oshcc / ishmem-oshc++: the same wrapper under the names OpenSHMEM programs' build
# scripts are pointed at (OSHCC=ishmem-oshcc); not oshcc, which an installed OpenMPI owns.
for w in ishmemc++ ishmem-oshcc ishmem-oshc++; do
    rm -f "$PREFIX/bin/$w"
    ln -s ishmemcc "$PREFIX/bin/$w"
done

# ---- headers, pkg-config, CMake ----
install -m 644 include/ishmem.h include/ishmemx.h include/shmem.h include/shmemx.h "$PREFIX/include/"
install -m 644 include/ishmem/*.h include/ishmem/*.cuh "$PREFIX/include/ishmem/"
sed "s|@VERSION@|$VERSION|g" cmake/ishmem.pc.in > "$PREFIX/lib/pkgconfig/ishmem.pc"
sed "s|@SONAME@|libishmem.so.$SOVERSION|g" cmake/ishmemConfig.cmake > "$PREFIX/lib/cmake/ishmem/ishmemConfig.cmake"
sed "s|@VERSION@|$VERSION|g" cmake/ishmemConfigVersion.cmake.in > "$PREFIX/lib/cmake/ishmem/ishmemConfigVersion.cmake"

# ---- documentation: README.md, docs/, abi/ lists, and every file a Markdown file links to
# (relative links, followed through linked Markdown files), in the repository's layout ----
DOC=$PREFIX/share/doc/ishmem
rm -rf "$DOC"
install -d "$DOC"
# doc_file PATH: installs the repository file PATH at DOC/PATH (once), following its links.
doc_file() {
    [ -f "$DOC/$1" ] && return 0
    [ -f "$1" ] || { echo "install-prefix: $1 (linked from the docs) does not exist" >&2; exit 1; }
    install -d "$DOC/$(dirname "$1")"
    install -m 644 "$1" "$DOC/$1"
    case "$1" in
    *.md) doc_links "$1" ;;
    esac
}
# doc_links MD: the relative link targets of a Markdown file, installed.
doc_links() {
    for target in $(grep -o '](\([^)#]*\)' "$1" | sed 's/^](//' | grep -v -e '^[a-z]*:' -e '^$' | sort -u); do
        path=$(realpath -m --relative-to=. "$(dirname "$1")/$target")
        case "$path" in
        ../*) echo "install-prefix: $1 links outside the repository: $target" >&2; exit 1 ;;
        esac
        doc_file "$path"
    done
}
for f in README.md docs/ENV.md docs/ARCHITECTURE.md docs/PERFORMANCE.md abi/symbols.txt abi/additions.txt \
    abi/shmem-symbols.txt abi/shmem-missing.txt; do
    doc_file "$f"
done

# ---- man pages ----
install -m 644 docs/man/ishmrun.1 docs/man/ishmem-info.1 docs/man/ishmemcc.1 "$PREFIX/share/man/man1/"
printf '.so man1/ishmemcc.1\n' > "$PREFIX/share/man/man1/ishmemc++.1"
install -m 644 docs/man/ishmem-oshcc.1 "$PREFIX/share/man/man1/"
printf '.so man1/ishmem-oshcc.1\n' > "$PREFIX/share/man/man1/ishmem-oshc++.1"
