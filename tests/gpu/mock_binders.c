/* mock_binders.c: the device-state binder and module paths of libishmem, run against
 * tests/gpu/mock_libcuda.c by scripts/mock-gpu-check.sh (no GPU, no CUDA runtime). The binders
 * only record what they are given. Checks: init runs the binders registered before it with
 * the filled state (pe, n_pes, 2 MiB aligned heap, peer bases, sync area reserved); a failing
 * binder is retried by ishmemx_gpu_in_use and not again once it succeeded; one registered
 * after init runs at once;
 * ishmemx_cumodule_init refuses NULL and binds a (mock) module. Only meaningful on the mock:
 * the module handle passed is fake. */
#include <ishmem.h>
#include <ishmemx.h>
#include <ishmem/device_state.h>
#include <stdint.h>
#include <string.h>
#include "gpu_test.h"

static ishmemi_dev_state_t seen;
static int good_calls, flaky_calls, late_calls;

static int good(const void *state, size_t bytes) {
    good_calls++;
    if (bytes != sizeof seen) return 1;
    memcpy(&seen, state, bytes);
    return 0;
}
static int flaky(const void *state, size_t bytes) {
    (void)state, (void)bytes;
    return flaky_calls++ == 0;
}
static int late(const void *state, size_t bytes) {
    (void)state, (void)bytes;
    late_calls++;
    return 0;
}

__attribute__((constructor)) static void register_early(void) {
    ishmemx_cuda_register_binder(good);
    ishmemx_cuda_register_binder(flaky);
}

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    int good0 = good_calls, flaky0 = flaky_calls; /* before gpu_in_use, which retries binders */
    CHECK(good0 == 1 && flaky0 == 1, "binder calls at init: %d %d", good0, flaky0);
    CHECK(ishmemx_gpu_in_use() == 1, "GPU backend not in use");
    CHECK(flaky_calls == 2, "flaky binder not retried by ishmemx_gpu_in_use (%d calls)", flaky_calls);
    CHECK(seen.initialized == 1 && seen.my_pe == me && seen.n_pes == npes, "state pe %d n %d init %u", seen.my_pe,
          seen.n_pes, seen.initialized);
    CHECK(seen.heap_base % (2u << 20) == 0 && seen.heap_size >= (1u << 20) && seen.sync_offset == 0,
          "heap %#llx size %llu", (unsigned long long)seen.heap_base, (unsigned long long)seen.heap_size);
    CHECK(seen.peer_base[me] == seen.heap_base, "own peer_base %#llx", (unsigned long long)seen.peer_base[me]);
    for (int q = 0; q < npes; q++) CHECK(seen.peer_base[q] != 0, "peer_base[%d] = 0", q);
    for (int q = npes; q < ISHMEMI_MAX_LOCAL_PES; q++) CHECK(seen.peer_base[q] == 0, "peer_base[%d] set", q);
    /* The library's part of the heap: the sync area, then the team areas, whose place and
     * number the sync area's words give (for device code); user blocks follow. */
    uint64_t *sync = (uint64_t *)(uintptr_t)seen.heap_base;
    uint64_t area = ishmem_uint64_g(&sync[ISHMEMI_SYNC_TEAM_AREA], me);
    uint64_t teams = ishmem_uint64_g(&sync[ISHMEMI_SYNC_TEAMS_MAX], me);
    CHECK(area == ISHMEMI_SYNC_BYTES && teams == 64, "team areas at %#llx, %llu slots", (unsigned long long)area,
          (unsigned long long)teams);
    uint64_t reserved = area + teams * ISHMEMI_TEAM_AREA_BYTES;
    /* the world team's descriptor in slot 0's area: start 0, stride 1, size npes, my_pe me */
    int32_t wd[4];
    ishmem_getmem(wd, (char *)(uintptr_t)(seen.heap_base + area) + 8 * ISHMEMI_TEAM_DESC_WORD, sizeof wd, me);
    CHECK(wd[0] == 0 && wd[1] == 1 && wd[2] == npes && wd[3] == me, "world descriptor %d %d %d %d", wd[0], wd[1],
          wd[2], wd[3]);
    void *first = ishmem_malloc(64);
    CHECK((uintptr_t)first == seen.heap_base + reserved, "first block %p", first);
    CHECK(ishmem_ptr(first, (me + 1) % npes) == (void *)(uintptr_t)(seen.peer_base[(me + 1) % npes] + reserved),
          "ishmem_ptr disagrees with peer_base");
    ishmem_barrier_all();
    CHECK(flaky_calls == 2, "flaky binder called again after success (%d calls)", flaky_calls);
    ishmemx_cuda_register_binder(late);
    CHECK(late_calls == 1, "late binder ran %d times", late_calls);
    printf("mock_binders: PE %d: the next line is an expected error message\n", me);
    fflush(stdout);
    CHECK(ishmemx_cumodule_init(NULL) != 0, "cumodule_init(NULL) returned 0");
    CHECK(ishmemx_cumodule_init((void *)&seen) == 0, "cumodule_init of a (mock) module failed");
    ishmem_free(first);
    ishmem_finalize();
    CHECK(ishmemx_gpu_in_use() == 0 && ishmemx_gpu_device() == -1, "queries after finalize");
    return gpu_test_end("mock_binders");
}
