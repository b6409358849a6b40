/* dstate_module.cu: a module loaded with cuModuleLoad by tests/gpu/cumodule.cu, compiled with
 * `nvcc -cubin`. It holds its own `static __constant__ ishmemi_dev_state_t ishmemi_dstate`
 * (mangled _ZL14ishmemi_dstate, the second name ishmemx_cumodule_init looks up), as a module
 * compiled with ishmem.h does. Not a program: kept out of tests/gpu/*.cu on purpose. */
#include <ishmem/device_state.h>
#include <stdint.h>

static __constant__ ishmemi_dev_state_t ishmemi_dstate;

/* Stores value + my_pe into the peer's copy of *data; reports what the state says. */
extern "C" __global__ void put_to_peer(int *data, int value, long long *report) {
    int me = ishmemi_dstate.my_pe, n = ishmemi_dstate.n_pes;
    report[0] = me;
    report[1] = n;
    report[2] = (long long)ishmemi_dstate.initialized;
    if (!ishmemi_dstate.initialized || n <= 0) return;
    int peer = (me + 1) % n;
    uint64_t off = (uint64_t)(uintptr_t)data - ishmemi_dstate.heap_base;
    *(volatile int *)(uintptr_t)(ishmemi_dstate.peer_base[peer] + off) = value + me;
    __threadfence_system();
}
