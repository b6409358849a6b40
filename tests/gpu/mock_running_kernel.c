/* mock_running_kernel.c: the host calls of the library while a kernel of this PE runs and
 * waits for this PE's proxy (issue 23), without a GPU. Run by scripts/mock-gpu-check.sh against
 * tests/gpu/mock_libcuda.c with the PEs split into 2 pretend nodes. The "kernel" is an on-queue
 * team sync of a team that spans both nodes, enqueued on a stream this program creates: the mock
 * runs it asynchronously, and it waits for the COLL reply of this PE's proxy (which needs the
 * library's GPU copies) as the device's would. While it waits, this PE calls:
 *   module    ishmemx_quiet_on_queue, the first call of the plain queue kernels' module
 *             (coll_ops across 2 GPUs hung there: the module was loaded at first use, and a
 *             module load waits for every running kernel while holding the context lock, so
 *             the proxy's copies could not run);
 *   cumodule  ishmemx_cumodule_init on a module of its own (it bound the device state with a
 *             synchronous cuMemcpyHtoD, which waits for the kernels of blocking streams; the
 *             other PE joins the team sync only after a host barrier that needs this PE).
 * With the bug the mock ends the PE with "mock libcuda: DEADLOCK: ..." after MOCK_CUDA_WAIT_S;
 * without, each PE prints its summary. No argument: both cases.
 * Build: cc mock_running_kernel.c -I$PREFIX/include -L$PREFIX/lib -lishmem -L<mock> -lcuda */
#include <ishmem.h>
#include <ishmemx.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "gpu_test.h"

/* The few driver calls this program makes itself (the mock's, as libcuda's). */
typedef void *CUstream;
typedef void *CUmodule;
int cuStreamCreate(CUstream *s, unsigned flags);
int cuStreamSynchronize(CUstream s);
int cuModuleLoadData(CUmodule *m, const void *image);

static const char *USER_MODULE = ".visible .global .align 8 .b8 ishmemi_dstate[560];\n";

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    int far = (me + npes / 2) % npes;
    CHECK(npes % 2 == 0 && ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, far, ISHMEM_TEAM_SHARED) < 0,
          "PE %d expected on another node (run with ISHMEM_NODE_SPLIT=2)", far);
    const char *which = argc > 1 ? argv[1] : "all";
    /* A team of its own, so its syncs never meet the world team's host barriers. */
    ishmem_team_t t = ISHMEM_TEAM_INVALID;
    CHECK(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0, "split");
    CUstream s = NULL;
    CHECK(cuStreamCreate(&s, 0) == 0, "cuStreamCreate"); /* a blocking stream */
    CUmodule m = NULL;
    CHECK(cuModuleLoadData(&m, USER_MODULE) == 0, "cuModuleLoadData (before any kernel runs)");

    if (!strcmp(which, "all") || !strcmp(which, "module")) {
        /* PE 1 joins late, so PE 0's sync is surely still waiting when it calls quiet. */
        if (me == 1) usleep(300000);
        ishmemx_team_sync_on_queue(t, NULL, s);
        ishmemx_quiet_on_queue(s);
        CHECK(cuStreamSynchronize(s) == 0, "stream");
        ishmem_barrier_all();
        printf("mock_running_kernel: PE %d: module case done\n", me);
    }
    if (!strcmp(which, "all") || !strcmp(which, "cumodule")) {
        if (me == 0) {
            ishmemx_team_sync_on_queue(t, NULL, s);
            CHECK(ishmemx_cumodule_init(m) == 0, "ishmemx_cumodule_init beside a running kernel");
            ishmem_barrier_all();
        } else {
            ishmem_barrier_all();
            ishmemx_team_sync_on_queue(t, NULL, s);
        }
        CHECK(cuStreamSynchronize(s) == 0, "stream");
        ishmem_barrier_all();
        printf("mock_running_kernel: PE %d: cumodule case done\n", me);
    }
    ishmem_team_destroy(t);
    int r = gpu_test_end("mock_running_kernel");
    ishmem_finalize();
    return r;
}
