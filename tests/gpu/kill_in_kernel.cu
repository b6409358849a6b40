/* kill_in_kernel.cu: a PE dies while the other waits inside a kernel for a signal only the
 * dead PE would send (issue 12, item 6). The job must end within seconds with the dead PE
 * named, and leave no GPU context hung (scripts/gpu-sanitize.sh times it and then runs a
 * short kernel on the GPU to show it is usable).
 * Build: nvcc -arch=sm_90 kill_in_kernel.cu $(pkg-config --cflags --libs ishmem) */
#include <ishmem.h>
#include <ishmemx.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

__global__ void wait_for(uint64_t *sig) { ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, 1); }

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe();
    uint64_t *sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    ishmem_barrier_all();
    if (me == 1) {
        usleep(500000);
        fprintf(stderr, "kill_in_kernel: PE 1 kills itself\n");
        raise(SIGKILL);
    }
    fprintf(stderr, "kill_in_kernel: PE %d waits in a kernel\n", me);
    wait_for<<<1, 1>>>(sig);
    cudaDeviceSynchronize();
    fprintf(stderr, "kill_in_kernel: PE %d: the kernel returned (it should not)\n", me);
    ishmem_finalize();
    return 0;
}
