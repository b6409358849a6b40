/* scope_probe.cu: what one thread's dependent chain of loads, atomics and fences costs on
 * this GPU's own memory, by the instruction forms the device API can use (issue 16: why
 * ishmem's g, fetch_add and compare_swap to itself measure slower than NVSHMEM's). Prints ns
 * per operation (globaltimer over N operations, after a warm-up).
 *   nvcc -O2 -arch=sm_90 -std=c++17 bench/exp/scope_probe.cu -o scope_probe && ./scope_probe */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda/atomic>
#include <cstdio>
#include <cstdint>

#define N 20000
#define CHAIN 1024

__device__ __forceinline__ unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* res[k] = ns per op of variant k */
__global__ void probe(int *chain, unsigned long long *ctr, double *res) {
    int idx = 0;
    unsigned long long t0, t1, acc = 0;
    /* 0: plain load chain (L1 may serve it) */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) idx = chain[idx];
        t1 = now();
    }
    res[0] = (double)(t1 - t0) / N;
    /* 1: volatile load chain (ishmem's g) */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) idx = *(volatile int *)&chain[idx];
        t1 = now();
    }
    res[1] = (double)(t1 - t0) / N;
    /* 2: ld.cg chain */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) idx = __ldcg(&chain[idx]);
        t1 = now();
    }
    res[2] = (double)(t1 - t0) / N;
    /* 3: relaxed system-scope load chain */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) idx = cuda::atomic_ref<int, cuda::thread_scope_system>(chain[idx]).load(cuda::memory_order_relaxed);
        t1 = now();
    }
    res[3] = (double)(t1 - t0) / N;
    /* 4: device-scope fetch_add chain (atomicAdd) */
    unsigned long long prev = 0;
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) prev = atomicAdd(ctr + (prev >> 63), 1ull);
        t1 = now();
    }
    res[4] = (double)(t1 - t0) / N;
    /* 5: system-scope relaxed fetch_add chain (ishmem's AMOs) */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++)
            prev = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>(ctr[prev >> 63]).fetch_add(1, cuda::memory_order_relaxed);
        t1 = now();
    }
    res[5] = (double)(t1 - t0) / N;
    /* 6: atomicAdd_system */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) prev = atomicAdd_system(ctr + (prev >> 63), 1ull);
        t1 = now();
    }
    res[6] = (double)(t1 - t0) / N;
    /* 7: store + __threadfence_system (fence.sc.sys) */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) {
            *(volatile int *)&chain[CHAIN] = i;
            __threadfence_system();
        }
        t1 = now();
    }
    res[7] = (double)(t1 - t0) / N;
    /* 8: store + fence.acq_rel.sys */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) {
            *(volatile int *)&chain[CHAIN] = i;
            cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_system);
        }
        t1 = now();
    }
    res[8] = (double)(t1 - t0) / N;
    /* 9: store + __threadfence (gpu scope) */
    for (int w = 0; w < 2; w++) {
        t0 = now();
        for (int i = 0; i < N; i++) {
            *(volatile int *)&chain[CHAIN] = i;
            __threadfence();
        }
        t1 = now();
    }
    res[9] = (double)(t1 - t0) / N;
    acc = idx + prev;
    res[10] = (double)acc; /* keeps the chains alive */
}

/* Where the chains live. The fetch_add row's gap (the same ATOM.E.ADD.64.STRONG.SYS instruction
 * in both libraries' SASS: bench/exp/sass_compare.sh, yet NVSHMEM's chain 195 ns against this
 * probe's 265 on cudaMalloc memory) points at the memory: ishmem's heap is cuMemAlloc'd (what
 * cudaMalloc does), NVSHMEM's is cuMemCreate'd and mapped (VMM, 512 MiB granularity, RDMA
 * capable). The driver calls come through cudaGetDriverEntryPointByVersion (no -lcuda). */
typedef CUresult (*pCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*pAddr)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*pMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*pAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);

static void *driver(const char *name) {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        return nullptr;
    return fn;
}

/* NVSHMEM-like: one cuMemCreate'd physical allocation of `bytes`, mapped read-write */
static char *vmm_alloc(size_t bytes, bool rdma) {
    auto create = (pCreate)driver("cuMemCreate");
    auto reserve = (pAddr)driver("cuMemAddressReserve");
    auto map = (pMap)driver("cuMemMap");
    auto access = (pAccess)driver("cuMemSetAccess");
    if (!create || !reserve || !map || !access) return nullptr;
    int dev = 0;
    cudaGetDevice(&dev);
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    if (create(&h, bytes, &prop, 0) != CUDA_SUCCESS) return nullptr;
    if (reserve(&va, bytes, bytes, 0, 0) != CUDA_SUCCESS) return nullptr;
    if (map(va, bytes, 0, h, 0) != CUDA_SUCCESS) return nullptr;
    CUmemAccessDesc a = {};
    a.location = prop.location;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (access(va, bytes, &a, 1) != CUDA_SUCCESS) return nullptr;
    return (char *)va;
}

int main() {
    double *res;
    cudaMallocManaged(&res, 16 * sizeof(double));
    int h[CHAIN];
    for (int i = 0; i < CHAIN; i++) h[i] = (i * 97 + 13) % CHAIN; /* a long cycle (97 odd, CHAIN a power of 2) */
    const size_t small = 1 << 21, big = (size_t)1 << 29;
    struct Mem {
        const char *name;
        char *base;
        size_t off;
    } mems[6];
    int nm = 0;
    char *p = nullptr;
    if (cudaMalloc(&p, small) == cudaSuccess) mems[nm++] = {"cudaMalloc 2 MiB", p, 0};
    p = nullptr;
    if (cudaMalloc(&p, big) == cudaSuccess) mems[nm++] = {"cudaMalloc 512 MiB @384 MiB (ishmem heap-like)", p, (size_t)384 << 20};
    p = nullptr;
    if (cudaMallocAsync(&p, small, 0) == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess)
        mems[nm++] = {"cudaMallocAsync pool 2 MiB", p, 0};
    if ((p = vmm_alloc(big, true))) mems[nm++] = {"cuMemCreate 512 MiB rdma @384 MiB (NVSHMEM-like)", p, (size_t)384 << 20};
    else printf("scope_probe: cuMemCreate 512 MiB (rdma) failed: row left out\n");
    if ((p = vmm_alloc(small, false))) mems[nm++] = {"cuMemCreate 2 MiB", p, 0};
    else printf("scope_probe: cuMemCreate 2 MiB failed: row left out\n");
    const char *names[] = {"load (plain, L1)",          "load volatile (ishmem g)",        "load ld.cg",
                           "load relaxed.sys",          "fetch_add atomicAdd (gpu scope)", "fetch_add relaxed.sys (ishmem)",
                           "fetch_add atomicAdd_system", "store + fence.sc.sys",           "store + fence.acq_rel.sys",
                           "store + fence.sc.gpu"};
    int rc = 0;
    for (int m = 0; m < nm; m++) {
        int *chain = (int *)(mems[m].base + mems[m].off);
        unsigned long long *ctr = (unsigned long long *)(mems[m].base + mems[m].off + 64 * 1024);
        cudaMemcpy(chain, h, sizeof h, cudaMemcpyHostToDevice);
        cudaMemset(ctr, 0, 16);
        probe<<<1, 1>>>(chain, ctr, res);
        if (cudaDeviceSynchronize() != cudaSuccess) {
            printf("scope_probe: %s: kernel failed\n", mems[m].name);
            rc = 1;
            continue;
        }
        /* the first memory keeps the old lines (docs quote them); the others are tagged */
        for (int k = 0; k < 10; k++)
            if (m == 0) printf("scope_probe: %-34s %8.1f ns\n", names[k], res[k]);
            else printf("scope_probe: [%s] %-34s %8.1f ns\n", mems[m].name, names[k], res[k]);
    }
    return rc;
}
