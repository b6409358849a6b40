/* ext_ops: the debugging extensions in kernels (issue 12), on the CUDA backend:
 * - ishmemx_print's three forms and every message type: device printf, which the driver
 *   writes to the host's stdout when the host synchronizes; captured from descriptor 1 and
 *   compared line by line (DEBUG lines only with ISHMEM_DEBUG=1: EXPECT_DEBUG=1 says so);
 * - ishmemx_timestamp and ishmemx_timestamp_nbi (%globaltimer, ns) into a cell of the symmetric
 *   heap and into mapped pinned host memory: nonzero, ordered (a stamp taken after another is
 *   not smaller); the offset from the host's CLOCK_REALTIME is printed, not asserted; the host
 *   form into the GPU heap (through the copy path) lies between two host clock readings;
 * - ishmemx_nop and ishmemx_nop_no_r: a kernel of 1000 of each completes.
 *   ext_ops          the checks
 *   ext_ops error    PE 1's kernel prints an ERROR message: the kernel traps (the launch
 *                    fails), the program says so and exits 1
 * Run: ishmrun -n 2 ext_ops (scripts/gpu-check.sh). */
#include <ishmem.h>
#include <ishmemx.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpu_test.h"

__global__ void k_print(int line) {
    ishmemx_print("device debug");
    ishmemx_print("device warning\n", ISHMEMX_PRINT_WARNING);
    ishmemx_print("ext_ops.cu", (long)line, "k_print", "with a location", ISHMEMX_PRINT_WARNING);
    ishmemx_print("raw to stdout", ISHMEMX_PRINT_STDOUT);
    ishmemx_print("|raw again\n", STDOUT);
}

__global__ void k_error() {
    if (ishmem_my_pe() == 1) ishmemx_print("the device is on fire", ISHMEMX_PRINT_ERROR);
}

__global__ void k_stamps(unsigned long *heap_cells, unsigned long *host_cells) {
    ishmemx_timestamp(ishmemx_ts_handle(&heap_cells[0]));
    ishmemx_timestamp_nbi(ishmemx_ts_handle(&host_cells[0]));
    for (volatile int i = 0; i < 10000; i++) { }
    ishmemx_timestamp_nbi(ishmemx_ts_handle(&heap_cells[1]));
    ishmemx_timestamp(ishmemx_ts_handle(&host_cells[1]));
    ishmem_quiet();
}

__global__ void k_nops(int *done) {
    for (int i = 0; i < 1000; i++) {
        ishmemx_nop();
        ishmemx_nop_no_r();
    }
    *done = 1;
}

static unsigned long long host_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Runs the print kernel with stdout redirected into a file; returns what was written. */
static char printed[8192];
static void capture_print(int line) {
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(1);
    dup2(fileno(tmp), 1);
    k_print<<<1, 1>>>(line);
    cudaError_t e = cudaDeviceSynchronize();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CHECK(e == cudaSuccess, "print kernel: %s", cudaGetErrorString(e));
    rewind(tmp);
    size_t n = fread(printed, 1, sizeof printed - 1, tmp);
    printed[n] = 0;
    fclose(tmp);
}

int main(int argc, char **argv) {
    ishmem_init();
    gt_me = ishmem_my_pe();
    int gpu = ishmemx_gpu_in_use();
    CHECK(gpu == 1, "the heap is not on the GPU (ishmemx_gpu_in_use = %d)", gpu);
    if (argc > 1 && !strcmp(argv[1], "error")) {
        ishmem_barrier_all();
        k_error<<<1, 1>>>();
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            fprintf(stderr, "ext_ops: PE %d: the kernel ended with %s\n", gt_me, cudaGetErrorString(e));
            return 1;
        }
        ishmem_barrier_all();
        ishmem_finalize();
        return gpu_test_end("ext_ops error");
    }

    /* print */
    const char *dbg = getenv("EXPECT_DEBUG");
    int debug = dbg && !strcmp(dbg, "1");
    int line = __LINE__;
    capture_print(line);
    char want[1024];
    snprintf(want, sizeof want,
             "[PE %d] WARNING: device warning\n[PE %d] WARNING: ext_ops.cu:%d: k_print: with a location\nraw to stdout|raw again\n",
             gt_me, gt_me, line);
    char with_debug[1100];
    snprintf(with_debug, sizeof with_debug, "[PE %d] DEBUG: device debug\n%s", gt_me, want);
    const char *expected = debug ? with_debug : want;
    if (strcmp(printed, expected) != 0)
        fprintf(stderr, "ext_ops: PE %d: device print output:\n%s\nwant:\n%s\n", gt_me, printed, expected);
    CHECK(strcmp(printed, expected) == 0, "device print output differs (above)");

    /* timestamps */
    unsigned long *heap_cells = (unsigned long *)ishmem_calloc(2, sizeof(unsigned long));
    unsigned long *host_cells = NULL, *host_cells_dev = NULL;
    CHECK(heap_cells != NULL, "ishmem_calloc");
    CHECK(cudaHostAlloc((void **)&host_cells, 2 * sizeof(unsigned long), cudaHostAllocMapped) == cudaSuccess, "cudaHostAlloc");
    CHECK(cudaHostGetDevicePointer((void **)&host_cells_dev, host_cells, 0) == cudaSuccess, "cudaHostGetDevicePointer");
    host_cells[0] = host_cells[1] = 0;
    unsigned long long h0 = host_ns();
    k_stamps<<<1, 1>>>(heap_cells, host_cells_dev);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "stamp kernel");
    unsigned long long h1 = host_ns();
    unsigned long hc[2];
    cudaMemcpy(hc, heap_cells, sizeof hc, cudaMemcpyDeviceToHost);
    CHECK(hc[0] != 0 && host_cells[0] != 0, "stamps written: heap %lu, host %lu", hc[0], host_cells[0]);
    CHECK(host_cells[0] >= hc[0] && hc[1] >= host_cells[0] && host_cells[1] >= hc[1],
          "stamps in order: %lu %lu %lu %lu", hc[0], host_cells[0], hc[1], host_cells[1]);
    printf("ext_ops: PE %d: device stamps minus the host clock before the kernel: %lld us (host window %llu us)\n", gt_me,
           ((long long)hc[0] - (long long)h0) / 1000, (h1 - h0) / 1000);
    /* the host form into the GPU heap */
    unsigned long long b = host_ns();
    ishmemx_timestamp(ishmemx_ts_handle(&heap_cells[0]));
    unsigned long long a = host_ns();
    cudaMemcpy(hc, heap_cells, sizeof hc, cudaMemcpyDeviceToHost);
    CHECK(b <= hc[0] && hc[0] <= a, "host stamp into the GPU heap %lu not in [%llu, %llu]", hc[0], b, a);

    /* nops */
    int *done = NULL;
    cudaMalloc((void **)&done, sizeof(int));
    cudaMemset(done, 0, sizeof(int));
    k_nops<<<4, 64>>>(done);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "nop kernel");
    int d = 0;
    cudaMemcpy(&d, done, sizeof d, cudaMemcpyDeviceToHost);
    CHECK(d == 1, "nop kernel finished: %d", d);
    ishmemx_nop();
    ishmemx_nop_no_r();

    ishmem_barrier_all();
    ishmem_free(heap_cells);
    cudaFreeHost(host_cells);
    cudaFree(done);
    ishmem_finalize();
    return gpu_test_end("ext_ops");
}
