#!/usr/bin/env bash
# bench/exp/sass_compare.sh: the machine code (SASS, sm_90) that ishmem and NVSHMEM 3.4.5 put
# in gpu_bench's latency kernels, side by side, without a GPU (issue 16: "registers and
# instructions per device call"; the fetch_add row's gap was not explained by the scope probe).
#
#   bench/exp/sass_compare.sh [KERNEL ...]      default: k_fetch_add k_compare_swap k_g k_p
#
# Builds bench/gpu_bench.cu twice with nvcc 13.0 (build/cuvenv, as scripts/cuda-compile-check.sh
# makes it): against include/ (ishmem) and against the NVSHMEM 3.4.5 wheel's headers
# (-DBENCH_PEER_NVSHMEM -rdc=true); cuobjdump/nvdisasm come from PyPI wheels (downloaded into
# build/sass-tools once). For each kernel it prints the instruction count, the atomics, loads
# and stores to global memory, calls, and register use, and leaves the whole listings in
# build/sass/<kernel>.{ishmem,nvshmem}.sass. Nothing runs: this is static, the time is measured
# by bench/run_gpu.sh on a GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tools=$root/build/sass-tools
out=$root/build/sass
venv=${CUDA_VENV:-$root/build/cuvenv}
mkdir -p "$tools" "$out"

nvcc_bin=$(find "$venv" -path '*/bin/nvcc' -type f 2>/dev/null | head -n 1)
[ -n "$nvcc_bin" ] || { echo "sass_compare: no nvcc under $venv (run scripts/cuda-compile-check.sh once)" >&2; exit 1; }
export PATH="$(dirname "$nvcc_bin"):$PATH"
pip=$venv/bin/pip

fetch() { # fetch WHEEL-NAME: download and unpack a wheel into $tools/NAME once
    local name=$1
    [ -d "$tools/$name" ] && return 0
    "$pip" download -q --no-deps -d "$tools/dl" "$2" >&2
    python3 -m zipfile -e "$(ls "$tools"/dl/"${name//-/_}"-*.whl | head -n 1)" "$tools/$name"
}
fetch nvidia-cuda-cuobjdump nvidia-cuda-cuobjdump
fetch nvidia-cuda-nvdisasm nvidia-cuda-nvdisasm
fetch nvidia-nvshmem-cu13 nvidia-nvshmem-cu13==3.4.5
cuobjdump=$(find "$tools/nvidia-cuda-cuobjdump" -name cuobjdump -type f | head -n 1)
nvdisasm=$(find "$tools/nvidia-cuda-nvdisasm" -name nvdisasm -type f | head -n 1)
chmod +x "$cuobjdump" "$nvdisasm"
export NVDISASM_PATH=$nvdisasm PATH="$(dirname "$nvdisasm"):$PATH"
nv=$(find "$tools/nvidia-nvshmem-cu13" -type d -path '*/nvshmem/include' | head -n 1)
nv=${nv%/include}

nvcc -std=c++17 -arch=sm_90 -cubin -Iinclude -Ibench bench/gpu_bench.cu -o "$out/ishmem.cubin"
nvcc -std=c++17 -arch=sm_90 -rdc=true -c -DBENCH_PEER_NVSHMEM -I"$nv/include" -Ibench \
    bench/gpu_bench.cu -o "$out/nvshmem.o"
"$cuobjdump" -sass "$out/ishmem.cubin" >"$out/all.ishmem.sass"
"$cuobjdump" -sass "$out/nvshmem.o" >"$out/all.nvshmem.sass"
"$cuobjdump" -res-usage "$out/ishmem.cubin" >"$out/res.ishmem.txt" 2>&1
"$cuobjdump" -res-usage "$out/nvshmem.o" >"$out/res.nvshmem.txt" 2>&1

[ $# -gt 0 ] || set -- k_fetch_add k_compare_swap k_g k_p
printf '%-16s %-8s %6s %6s %6s %6s %6s %5s %s\n' kernel library instr atomic ld.glb st.glb call regs "atomic and load forms"
for k in "$@"; do
    for lib in ishmem nvshmem; do
        # one function's listing: from its header to the next function's
        awk -v k="$k" '/Function : / { p = ($0 ~ ("_Z[0-9]+" k "P")) } p' "$out/all.$lib.sass" >"$out/$k.$lib.sass"
        f=$out/$k.$lib.sass
        [ -s "$f" ] || { echo "sass_compare: $k not found in the $lib build" >&2; continue; }
        instr=$(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$f" || true)
        atom=$(grep -cE '\b(ATOM|ATOMG|RED)\.' "$f" || true)
        ld=$(grep -cE '\b(LDG|LD)\.E' "$f" || true)
        st=$(grep -cE '\b(STG|ST)\.E' "$f" || true)
        call=$(grep -cE '\bCALL\.' "$f" || true)
        mangled=$(head -n 1 "$f" | sed 's/.*Function : //')
        regs=$(grep -A1 "Function $mangled:" "$out/res.$lib.txt" | grep -oE 'REG:[0-9]+' | head -n 1 | cut -d: -f2)
        forms=$({ grep -oE '\b(ATOM|ATOMG|RED|LDG|LD)\.E[A-Z0-9.]*' "$f" || true; } | sort | uniq -c |
            awk '{printf "%s%sx%s", s, $1, $2; s=" "}')
        printf '%-16s %-8s %6s %6s %6s %6s %6s %5s %s\n' "$k" "$lib" "$instr" "$atom" "$ld" "$st" "$call" "${regs:-?}" "$forms"
    done
done
echo "listings: $out/<kernel>.{ishmem,nvshmem}.sass"
