#!/bin/sh
# install_layout.sh <prefix>: what `make install` puts into the prefix (issue 14):
# - lib/libishmem.so -> libishmem.so.N -> libishmem.so.N.x.y, soname libishmem.so.N; the
#   library and the tools stripped, with a debug link to their debug info in .debug/;
# - the CMake package names the versioned soname;
# - share/doc/ishmem: README.md, docs/ENV.md, ARCHITECTURE.md, PERFORMANCE.md, abi/, and every
#   relative link of every installed Markdown file resolves inside the installed docs;
# - man pages of ishmrun, ishmem-info, ishmemcc (and ishmemc++), ishmem-oshcc (and
#   ishmem-oshc++) that format without warnings and document every option of the tools' --help;
# - the OpenSHMEM side (issue 25): include/shmem.h and shmemx.h, the ishmem-oshcc and
#   ishmem-oshc++ wrappers, abi/shmem-symbols.txt and abi/shmem-missing.txt.
set -u
prefix=$1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
lib=$prefix/lib

# ---- versioned library ----
[ -L "$lib/libishmem.so" ] || bad "lib/libishmem.so is not a symbolic link"
so=$(readlink "$lib/libishmem.so")
case "$so" in libishmem.so.[0-9]*) ;; *) bad "lib/libishmem.so -> '$so', not libishmem.so.N" ;; esac
[ -L "$lib/$so" ] || bad "lib/$so is not a symbolic link"
real=$(readlink "$lib/$so")
case "$real" in "$so".[0-9]*.[0-9]*) ;; *) bad "lib/$so -> '$real', not $so.x.y" ;; esac
[ -f "$lib/$real" ] && [ ! -L "$lib/$real" ] || bad "lib/$real is not a file"
soname=$(readelf -d "$lib/$real" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "$so" ] || bad "the soname is '$soname', not $so"
echo "ok: libishmem.so -> $so -> $real (soname $soname)"
grep -q "IMPORTED_SONAME \"$so\"" "$lib/cmake/ishmem/ishmemConfig.cmake" || bad "ishmemConfig.cmake does not name the soname $so"

# ---- stripped, debug info kept aside ----
for f in "$lib/$real" "$prefix/bin/ishmrun" "$prefix/bin/ishmem-info"; do
    sections=$(readelf -S -W "$f" 2>/dev/null)
    if echo "$sections" | grep -q -E '\.debug_info|\.symtab'; then
        bad "$f is not stripped"
    fi
    echo "$sections" | grep -q '\.gnu_debuglink' || bad "$f has no .gnu_debuglink"
    dbg="$(dirname "$f")/.debug/$(basename "$f").debug"
    [ -f "$dbg" ] || bad "no debug file $dbg"
    readelf -S -W "$dbg" 2>/dev/null | grep -q '\.debug_info' || bad "$dbg holds no .debug_info"
done
echo "ok: stripped, debug info in .debug/"

# ---- docs and their links ----
doc=$prefix/share/doc/ishmem
for f in README.md docs/ENV.md docs/ARCHITECTURE.md docs/PERFORMANCE.md abi/symbols.txt abi/additions.txt \
    abi/shmem-symbols.txt abi/shmem-missing.txt; do
    [ -f "$doc/$f" ] || bad "share/doc/ishmem/$f is not installed"
done
nlinks=0
for md in $(cd "$doc" && find . -name '*.md' | sort); do
    for target in $(grep -o '](\([^)#]*\)' "$doc/$md" | sed 's/^](//' | grep -v -e '^[a-z]*:' -e '^$' | sort -u); do
        nlinks=$((nlinks + 1))
        [ -e "$doc/$(dirname "$md")/$target" ] || bad "share/doc/ishmem/$md links to $target, which is not installed"
    done
done
[ "$nlinks" -gt 5 ] || bad "only $nlinks relative links found in the installed docs"
echo "ok: $nlinks relative links of the installed docs resolve"

# ---- man pages ----
man1=$prefix/share/man/man1
for page in ishmrun ishmem-info ishmemcc ishmem-oshcc; do
    [ -f "$man1/$page.1" ] || { bad "no man page $page.1"; continue; }
    grep -q '^\.SH NAME' "$man1/$page.1" || bad "$page.1 has no NAME section"
    grep -q '^\.SH SYNOPSIS' "$man1/$page.1" || bad "$page.1 has no SYNOPSIS section"
    if command -v groff >/dev/null 2>&1; then
        out=$(groff -man -Tutf8 -ww "$man1/$page.1" 2>&1 >/dev/null)
        [ -z "$out" ] || bad "$page.1: groff warns: $out"
    fi
done
[ "$(cat "$man1/ishmemc++.1" 2>/dev/null)" = ".so man1/ishmemcc.1" ] || bad "ishmemc++.1 is not a link to ishmemcc.1"
[ "$(cat "$man1/ishmem-oshc++.1" 2>/dev/null)" = ".so man1/ishmem-oshcc.1" ] || bad "ishmem-oshc++.1 is not a link to ishmem-oshcc.1"
# every option of the tools' --help is in their man page
opts() { "$1" --help | grep -o -E '(^|[ ,])--?[a-z][a-z-]*' | sed 's/^[ ,]*//' | sort -u; }
for tool in ishmrun ishmem-info; do
    for o in $(opts "$prefix/bin/$tool"); do
        esc=$(echo "$o" | sed 's/-/\\\\-/g')
        grep -q -e "$esc" "$man1/$tool.1" || bad "$tool.1 does not document $o"
    done
done
for o in -show --showme --version ISHMEM_CC ISHMEM_CXX; do
    esc=$(echo "$o" | sed 's/-/\\\\-/g')
    grep -q -e "$esc" "$man1/ishmemcc.1" || bad "ishmemcc.1 does not document $o"
    grep -q -e "$esc" "$man1/ishmem-oshcc.1" || bad "ishmem-oshcc.1 does not document $o"
done
# ---- OpenSHMEM headers and wrappers ----
for h in shmem.h shmemx.h; do
    [ -f "$prefix/include/$h" ] || bad "include/$h is not installed"
done
for w in ishmem-oshcc ishmem-oshc++; do
    [ -x "$prefix/bin/$w" ] || bad "bin/$w is not installed"
done
echo "ok: OpenSHMEM headers and wrappers"
echo "ok: man pages"
[ "$fail" = 0 ] && echo "PASS: install layout"
exit $fail
