/* bench/exp/ring_probe.cu: where should the proxy ring live? (issue 13, item 1: "pinned host
 * memory mapped into the device, or device memory the host polls: measure both and pick").
 * Standalone (no ishmem): the ring protocol of include/ishmem/device_state.h in miniature (a
 * ticket counter in device memory, 1024 slots of 64 bytes, a sequence word per slot, a done
 * word per slot with the reply beside it, back-pressure when the ring is full), a host thread
 * that serves the requests (does nothing with them but reply), and three placements:
 *   host    slots and done words in pinned host memory mapped into the device (what ishmem
 *           does): the GPU writes requests and polls done words across the bus, the host
 *           polls and replies with plain loads and stores;
 *   device  slots and done words in device memory: the GPU posts and polls locally, the host
 *           polls the slots with cudaMemcpyAsync (32 slots per read, the ready ones read a
 *           second time: one copy's reads are unordered) and replies with it;
 *   hybrid  slots in pinned host memory (the host polls with loads), done words in device
 *           memory (the GPU polls locally; the host replies with cudaMemcpyAsync).
 * Rows (one CSV line each: probe,placement,row,value,unit):
 *   lat_reply      one thread, 2000 requests each waiting for its reply: us per request
 *   rate_1thread   one thread, 20000 requests without reply: million requests per second
 *   rate_1024      8 blocks x 128 threads, 64 requests each without reply: M requests/s
 * Every kernel has a 10 s deadline (globaltimer): a timeout prints TIMEOUT and exits 1.
 * Build: nvcc -std=c++17 -arch=sm_90 -O2 bench/exp/ring_probe.cu -o ring_probe */
#include <cuda_runtime.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

typedef unsigned long long u64;
constexpr int SLOTS = 1024;
constexpr u64 HELD = 1ull << 63;
constexpr u64 REPLY = 1ull << 62;
struct alignas(64) Slot {
    u64 w[8]; /* w0: ticket + 1 once written; w1: flags; w2: payload */
};
enum Placement { HOST = 0, DEVICE = 1, HYBRID = 2 };
static const char *placement_name[] = {"host", "device", "hybrid"};

struct Ring {
    Slot *slots;   /* device view */
    u64 *done;     /* device view: 8 words per slot, [0] done, [1] reply */
    u64 *ticket;   /* device memory */
    int *err;      /* mapped host memory */
};

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "ring_probe: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

/* Posts one request; waits for the reply when asked. Returns the reply, or ~0 on timeout. */
__device__ u64 post(Ring r, u64 payload, bool reply, u64 deadline) {
    u64 t = atomicAdd(r.ticket, 1ull);
    volatile u64 *d = r.done + (t % SLOTS) * 8;
    if (t >= SLOTS)
        while (*d != t - SLOTS + 1)
            if (now_ns() > deadline) {
                atomicExch(r.err, 1);
                return ~0ull;
            }
    volatile Slot *s = r.slots + t % SLOTS;
    s->w[1] = reply ? REPLY : 0;
    s->w[2] = payload;
    __threadfence_system();
    s->w[0] = t + 1;
    if (!reply) return 0;
    while (*d != ((t + 1) | HELD))
        if (now_ns() > deadline) {
            atomicExch(r.err, 2);
            return ~0ull;
        }
    u64 v = d[1];
    *d = t + 1; /* release the slot */
    return v;
}

__global__ void k_lat(Ring r, int n, u64 *bad) {
    u64 deadline = now_ns() + 10000000000ull;
    for (int i = 0; i < n; i++) {
        u64 v = post(r, (u64)i, true, deadline);
        if (v == ~0ull) return;
        if (v != (u64)i + 1) atomicAdd(bad, 1ull);
    }
}

__global__ void k_rate(Ring r, int per_thread) {
    u64 deadline = now_ns() + 10000000000ull;
    for (int i = 0; i < per_thread; i++)
        if (post(r, (u64)i, false, deadline) == ~0ull) return;
}

/* The serving thread. */
static void serve(Placement p, Slot *hslots, u64 *hdone, Slot *dslots, u64 *ddone, std::atomic<bool> *stop) {
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    Slot *buf;
    u64 *word;
    CK(cudaMallocHost(&buf, 32 * sizeof(Slot)));
    CK(cudaMallocHost(&word, 2 * sizeof(u64)));
    u64 next = 0;
    while (true) {
        int ready = 0;
        const volatile Slot *view;
        if (p == DEVICE) {
            /* read up to 32 slots from next (not across the ring's end) */
            int idx = (int)(next % SLOTS), cnt = SLOTS - idx < 32 ? SLOTS - idx : 32;
            CK(cudaMemcpyAsync(buf, dslots + idx, cnt * sizeof(Slot), cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            view = buf;
            while (ready < cnt && view[ready].w[0] == next + ready + 1) ready++;
            if (ready) {
                /* One copy's reads are not ordered: a slot whose sequence word was seen may have
                 * been read before its payload landed. Read the ready ones again (their payload
                 * was visible before their sequence word: the poster's fence). */
                CK(cudaMemcpyAsync(buf, dslots + idx, ready * sizeof(Slot), cudaMemcpyDeviceToHost, st));
                CK(cudaStreamSynchronize(st));
            }
        } else {
            view = hslots + next % SLOTS;
            ready = view[0].w[0] == next + 1 ? 1 : 0;
        }
        if (!ready) {
            if (stop->load()) break;
            continue;
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        for (int i = 0; i < ready; i++) {
            u64 t = next + i;
            bool reply = view[i].w[1] & REPLY;
            u64 v = view[i].w[2] + 1;
            if (p == HOST) {
                volatile u64 *d = hdone + (t % SLOTS) * 8;
                if (reply) {
                    d[1] = v;
                    std::atomic_thread_fence(std::memory_order_release);
                    d[0] = (t + 1) | HELD;
                } else {
                    d[0] = t + 1;
                }
            } else {
                u64 *d = ddone + (t % SLOTS) * 8;
                word[0] = v;
                word[1] = reply ? ((t + 1) | HELD) : t + 1;
                if (reply) CK(cudaMemcpyAsync(d + 1, &word[0], 8, cudaMemcpyHostToDevice, st));
                CK(cudaMemcpyAsync(d, &word[1], 8, cudaMemcpyHostToDevice, st));
                CK(cudaStreamSynchronize(st));
            }
        }
        next += ready;
    }
    CK(cudaFreeHost(buf));
    CK(cudaFreeHost(word));
    CK(cudaStreamDestroy(st));
}

int main() {
    CK(cudaSetDeviceFlags(cudaDeviceMapHost));
    Slot *hslots, *dslots, *hslots_dev;
    u64 *hdone, *ddone, *hdone_dev, *ticket, *bad;
    int *err, *err_dev;
    CK(cudaHostAlloc(&hslots, SLOTS * sizeof(Slot), cudaHostAllocMapped));
    CK(cudaHostAlloc(&hdone, SLOTS * 8 * sizeof(u64), cudaHostAllocMapped));
    CK(cudaHostAlloc(&err, sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&hslots_dev, hslots, 0));
    CK(cudaHostGetDevicePointer(&hdone_dev, hdone, 0));
    CK(cudaHostGetDevicePointer(&err_dev, err, 0));
    CK(cudaMalloc(&dslots, SLOTS * sizeof(Slot)));
    CK(cudaMalloc(&ddone, SLOTS * 8 * sizeof(u64)));
    CK(cudaMalloc(&ticket, sizeof(u64)));
    CK(cudaMalloc(&bad, sizeof(u64)));
    cudaStream_t ks;
    CK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("probe,placement,row,value,unit  # %s\n", prop.name);
    int rc = 0;
    for (int pl = HOST; pl <= HYBRID; pl++) {
        Placement p = (Placement)pl;
        Ring r{p == DEVICE ? dslots : hslots_dev, p == HOST ? hdone_dev : ddone, ticket, err_dev};
        for (int row = 0; row < 3; row++) {
            memset(hslots, 0, SLOTS * sizeof(Slot));
            memset(hdone, 0, SLOTS * 8 * sizeof(u64));
            *err = 0;
            CK(cudaMemset(dslots, 0, SLOTS * sizeof(Slot)));
            CK(cudaMemset(ddone, 0, SLOTS * 8 * sizeof(u64)));
            CK(cudaMemset(ticket, 0, sizeof(u64)));
            CK(cudaMemset(bad, 0, sizeof(u64)));
            CK(cudaDeviceSynchronize());
            std::atomic<bool> stop{false};
            std::thread server(serve, p, hslots, hdone, dslots, ddone, &stop);
            int n = row == 0 ? 2000 : row == 1 ? 20000 : 64;
            auto t0 = std::chrono::steady_clock::now();
            if (row == 0) k_lat<<<1, 1, 0, ks>>>(r, n, bad);
            else if (row == 1) k_rate<<<1, 1, 0, ks>>>(r, n);
            else k_rate<<<8, 128, 0, ks>>>(r, n);
            CK(cudaStreamSynchronize(ks));
            /* the requests without reply are served when the ticket count is reached */
            u64 posted = 0;
            CK(cudaMemcpy(&posted, ticket, sizeof posted, cudaMemcpyDeviceToHost));
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            stop = true;
            server.join();
            u64 nbad = 0;
            CK(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
            const char *name = row == 0 ? "lat_reply" : row == 1 ? "rate_1thread" : "rate_1024";
            if (*err || nbad) {
                printf("ring_probe,%s,%s,%s,err=%d bad=%llu\n", placement_name[p], name, *err ? "TIMEOUT" : "WRONG", *err, nbad);
                rc = 1;
                continue;
            }
            if (row == 0) printf("ring_probe,%s,%s,%.3f,us\n", placement_name[p], name, s * 1e6 / n);
            else printf("ring_probe,%s,%s,%.3f,Mreq/s\n", placement_name[p], name, (double)posted / s / 1e6);
            fflush(stdout);
        }
    }
    return rc;
}
