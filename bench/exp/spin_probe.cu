/* bench/exp/spin_probe.cu: which CUDA operations can run beside a kernel of the same process
 * that spins until the host releases it (issue 23: a PE's staging server and proxy issue
 * copies, memsets and kernels on the PE's GPU while that PE's own kernel spins waiting for
 * them). Standalone (no ishmem). For each operation: a spin kernel is launched on the legacy
 * default stream (as `kernel<<<g, b>>>(...)` does), another thread performs the operation,
 * and the operation either finishes within 2 s (row "runs") or does not (row "WAITS": it
 * waits for the spinning kernel; the kernel is then released and the operation finishes).
 *   spin_probe [DEVICE]        one CSV line per operation: probe,device,operation,result,ms
 * Build: nvcc -std=c++17 -arch=sm_90 bench/exp/spin_probe.cu -o spin_probe -lcuda */
#include <cuda.h>
#include <cuda_runtime.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

__global__ void spin(volatile int *flag) {
    while (*flag == 0) {
    }
}
__global__ void tiny(unsigned long long *p) { atomicAdd(p, 1ull); }
__global__ void first_use(unsigned long long *p) { atomicAdd(p, 2ull); } /* launched once, in a probe */

static const char *PTX_A = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry probe_a(.param .u64 p) {
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  atom.global.add.u64 %rd1, [%rd2], 1;
  ret;
}
)";
static const char *PTX_B = R"(
.version 8.0
.target sm_90
.address_size 64
.global .align 8 .b8 probe_global[64];
.visible .entry probe_b(.param .u64 p) {
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  atom.global.add.u64 %rd1, [%rd2], 1;
  ret;
}
)";

static int dev;
static int *flag;
static CUcontext ctx;

#define CK(x)                                                                                   \
    do {                                                                                        \
        auto r_ = (x);                                                                          \
        if ((int)r_ != 0) {                                                                     \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, (int)r_);         \
        }                                                                                       \
    } while (0)

/* Runs op in another thread while `blocks` x `threads` spin on the legacy stream. */
static void probe(const char *name, std::function<void()> op, int blocks = 1, int threads = 32) {
    *(volatile int *)flag = 0;
    spin<<<blocks, threads>>>(flag);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic<int> done{0};
    auto t0 = std::chrono::steady_clock::now();
    std::thread th([&] {
        cuCtxSetCurrent(ctx);
        op();
        done.store(1);
    });
    while (!done.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int ran = done.load();
    *(volatile int *)flag = 1;
    th.join();
    CK(cudaDeviceSynchronize());
    printf("spin_probe,%d,%s,%s,%.3f\n", dev, name, ran ? "runs" : "WAITS", ms);
    fflush(stdout);
}

int main(int argc, char **argv) {
    dev = argc > 1 ? atoi(argv[1]) : 0;
    CK(cudaSetDevice(dev));
    CK(cudaFree(0));
    CK(cuCtxGetCurrent(&ctx));
    CK(cudaHostAlloc((void **)&flag, 64, cudaHostAllocMapped | cudaHostAllocPortable));
    const size_t n = 1 << 20;
    char *d, *pinned;
    unsigned long long *ctr;
    CK(cudaMalloc(&d, n));
    CK(cudaMalloc(&ctr, 64));
    CK(cudaHostAlloc((void **)&pinned, n, cudaHostAllocPortable));
    std::vector<char> pageable(n, 1);
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    int lo = 0, hi = 0;
    CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t nb, hp, blocking;
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithPriority(&hp, cudaStreamNonBlocking, hi));
    CK(cudaStreamCreate(&blocking));
    tiny<<<1, 1, 0, nb>>>(ctr); /* loaded */
    CK(cudaDeviceSynchronize());
    CUmodule ma;
    CUfunction fa;
    CK(cuModuleLoadData(&ma, PTX_A));
    CK(cuModuleGetFunction(&fa, ma, "probe_a"));
    printf("spin_probe,%d,sms=%d priorities=%d..%d lazy=%s,info,0\n", dev, sms, lo, hi,
           getenv("CUDA_MODULE_LOADING") ? getenv("CUDA_MODULE_LOADING") : "(default)");

    probe("memcpyAsync DtoH pageable, nonblocking stream", [&] {
        CK(cudaMemcpyAsync(pageable.data(), d, 4096, cudaMemcpyDeviceToHost, nb));
        CK(cudaStreamSynchronize(nb));
    });
    probe("memcpyAsync HtoD pageable, nonblocking stream", [&] {
        CK(cudaMemcpyAsync(d, pageable.data(), 4096, cudaMemcpyHostToDevice, nb));
        CK(cudaStreamSynchronize(nb));
    });
    probe("cuMemcpyAsync DtoH pageable 64 KiB, nonblocking stream", [&] {
        CK(cuMemcpyAsync((CUdeviceptr)pageable.data(), (CUdeviceptr)d, 65536, (CUstream)nb));
        CK(cuStreamSynchronize((CUstream)nb));
    });
    probe("cuMemcpyAsync HtoD pageable 64 KiB, nonblocking stream", [&] {
        CK(cuMemcpyAsync((CUdeviceptr)d, (CUdeviceptr)pageable.data(), 65536, (CUstream)nb));
        CK(cuStreamSynchronize((CUstream)nb));
    });
    probe("memcpyAsync DtoH pinned, nonblocking stream", [&] {
        CK(cudaMemcpyAsync(pinned, d, 4096, cudaMemcpyDeviceToHost, nb));
        CK(cudaStreamSynchronize(nb));
    });
    probe("memcpyAsync HtoD pinned, nonblocking stream", [&] {
        CK(cudaMemcpyAsync(d, pinned, 4096, cudaMemcpyHostToDevice, nb));
        CK(cudaStreamSynchronize(nb));
    });
    probe("memsetAsync, nonblocking stream", [&] {
        CK(cudaMemsetAsync(d, 0, 4096, nb));
        CK(cudaStreamSynchronize(nb));
    });
    probe("kernel (loaded), nonblocking stream", [&] {
        tiny<<<1, 1, 0, nb>>>(ctr);
        CK(cudaStreamSynchronize(nb));
    });
    probe("cuLaunchKernel PTX module loaded before, nonblocking stream", [&] {
        void *args[] = {&ctr};
        CK(cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, (CUstream)nb, args, nullptr));
        CK(cuStreamSynchronize((CUstream)nb));
    });
    probe("runtime kernel, first launch (CUDA_MODULE_LOADING), nonblocking stream", [&] {
        first_use<<<1, 1, 0, nb>>>(ctr);
        CK(cudaStreamSynchronize(nb));
    });
    CUmodule mb = nullptr;
    CUfunction fb = nullptr;
    probe("cuModuleLoadData (PTX JIT)", [&] { CK(cuModuleLoadData(&mb, PTX_B)); });
    probe("cuModuleGetFunction", [&] { CK(cuModuleGetFunction(&fb, mb, "probe_b")); });
    probe("cuLaunchKernel first launch, nonblocking stream", [&] {
        void *args[] = {&ctr};
        CK(cuLaunchKernel(fb, 1, 1, 1, 1, 1, 1, 0, (CUstream)nb, args, nullptr));
        CK(cuStreamSynchronize((CUstream)nb));
    });
    probe("cuModuleGetGlobal", [&] {
        CUdeviceptr g;
        size_t b;
        CK(cuModuleGetGlobal(&g, &b, mb, "probe_global"));
    });
    probe("cuMemcpyHtoD (synchronous) to a module global", [&] {
        CUdeviceptr g;
        size_t b;
        CK(cuModuleGetGlobal(&g, &b, mb, "probe_global"));
        char z[64] = {0};
        CK(cuMemcpyHtoD(g, z, 64));
    });
    probe("cuMemcpyHtoDAsync + stream sync to a module global, nonblocking stream", [&] {
        CUdeviceptr g;
        size_t b;
        CK(cuModuleGetGlobal(&g, &b, mb, "probe_global"));
        static char z[64] = {0};
        CK(cuMemcpyHtoDAsync(g, z, 64, (CUstream)nb));
        CK(cuStreamSynchronize((CUstream)nb));
    });
    probe("cudaMemcpy DtoH (synchronous)", [&] { CK(cudaMemcpy(pinned, d, 4096, cudaMemcpyDeviceToHost)); });
    probe("memcpyAsync DtoH pinned, blocking stream", [&] {
        CK(cudaMemcpyAsync(pinned, d, 4096, cudaMemcpyDeviceToHost, blocking));
        CK(cudaStreamSynchronize(blocking));
    });
    probe("cuStreamCreate nonblocking", [&] {
        CUstream s;
        CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    });
    probe("cuMemAllocHost 64 KiB", [&] {
        void *p;
        CK(cuMemAllocHost(&p, 65536));
    });
    probe("cuMemHostRegister 1 MiB", [&] {
        static std::vector<char> r(1 << 20);
        CK(cuMemHostRegister(r.data(), r.size(), 0));
    });
    probe("cuMemAlloc 1 MiB", [&] {
        CUdeviceptr p;
        CK(cuMemAlloc(&p, 1 << 20));
    });
    probe("cuMemFree", [&] {
        CUdeviceptr p;
        CK(cuMemAlloc(&p, 1 << 20));
        CK(cuMemFree(p));
    });
    probe("cuMemFreeHost", [&] {
        void *p;
        CK(cuMemAllocHost(&p, 4096));
        CK(cuMemFreeHost(p));
    });
    probe("cuStreamWriteValue64, nonblocking stream", [&] {
        CK(cuStreamWriteValue64((CUstream)nb, (CUdeviceptr)ctr, 5, 0));
        CK(cuStreamSynchronize((CUstream)nb));
    });
    /* Every SM full of spinning threads: a kernel on a high-priority stream waits for SMs. */
    probe("kernel, high-priority stream, spin on every SM (2048 threads/SM)", [&] {
        tiny<<<1, 1, 0, hp>>>(ctr);
        CK(cudaStreamSynchronize(hp));
    }, sms * 2, 1024);
    probe("memcpyAsync DtoH pageable, spin on every SM", [&] {
        CK(cudaMemcpyAsync(pageable.data(), d, 4096, cudaMemcpyDeviceToHost, nb));
        CK(cudaStreamSynchronize(nb));
    }, sms * 2, 1024);
    probe("memsetAsync, spin on every SM", [&] {
        CK(cudaMemsetAsync(d, 0, 4096, nb));
        CK(cudaStreamSynchronize(nb));
    }, sms * 2, 1024);
    return 0;
}
