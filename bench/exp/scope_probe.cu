/* scope_probe.cu: what one thread's dependent chain of loads, atomics and fences costs on
 * this GPU's own memory, by the instruction forms the device API can use (issue 16: why
 * ishmem's g, fetch_add and compare_swap to itself measure slower than NVSHMEM's). Prints ns
 * per operation (globaltimer over N operations, after a warm-up).
 *   nvcc -O2 -arch=sm_90 -std=c++17 bench/exp/scope_probe.cu -o scope_probe && ./scope_probe */
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

int main() {
    int *chain;
    unsigned long long *ctr;
    double *res;
    cudaMalloc(&chain, (CHAIN + 32) * sizeof(int));
    cudaMalloc(&ctr, 2 * sizeof(unsigned long long));
    cudaMallocManaged(&res, 16 * sizeof(double));
    int h[CHAIN];
    for (int i = 0; i < CHAIN; i++) h[i] = (i * 97 + 13) % CHAIN; /* a long cycle (97 odd, CHAIN a power of 2) */
    cudaMemcpy(chain, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(ctr, 0, 16);
    probe<<<1, 1>>>(chain, ctr, res);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        printf("scope_probe: kernel failed\n");
        return 1;
    }
    const char *names[] = {"load (plain, L1)",          "load volatile (ishmem g)",        "load ld.cg",
                           "load relaxed.sys",          "fetch_add atomicAdd (gpu scope)", "fetch_add relaxed.sys (ishmem)",
                           "fetch_add atomicAdd_system", "store + fence.sc.sys",           "store + fence.acq_rel.sys",
                           "store + fence.sc.gpu"};
    for (int k = 0; k < 10; k++) printf("scope_probe: %-34s %8.1f ns\n", names[k], res[k]);
    return 0;
}
