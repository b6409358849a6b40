/* mock_libcuda.c: a stand-in libcuda.so for running libishmem's CUDA backend on a machine
 * without a GPU (scripts/mock-gpu-check.sh). It implements the driver calls libishmem makes,
 * with "device memory" in shared-memory files:
 *  - every device allocation is mapped twice: PROT_NONE at the address handed out (so a host
 *    dereference of a device pointer by the library segfaults, as it would with a real GPU)
 *    and read-write at a shadow address the mock's copies and atomics use;
 *  - IPC handles name the file; cuIpcOpenMemHandle maps it (twice) in the importer;
 *  - the host-kernel launch (ishmemi_host_amo) runs the AMO with host atomics on the shadow;
 *  - the queue modules load; of their kernels, those that only post into the proxy ring (the
 *    on-queue RMA forms to PEs of other nodes, cuda/queue_remote_kernels.cu, and the queue's
 *    quiet) run here as the device does (include/ishmem/cuda_impl.cuh: proxy_put, proxy_get,
 *    strided, put_signal, proxy_quiet, with global-memory buffers; their puts are never
 *    inline: the kernel does not read a source the host passed), on the launching thread;
 *    the others return CUDA_ERROR_NOT_SUPPORTED;
 *  - streams: the library's work runs at once (it synchronizes after each call anyway); an
 *    emulated kernel launched on a stream made by cuStreamCreate (not the NULL stream) runs
 *    asynchronously, in stream order, on a thread of that stream, and counts as a running
 *    kernel until it returns (a kernel that waits for the proxy runs until the reply comes);
 *    cuStreamSynchronize waits for the stream's kernels; a copy or memset on such a stream
 *    waits for the stream's earlier kernels first (stream order);
 *  - what a real driver does beside a running kernel of the context (measured on H100 by
 *    bench/exp/spin_probe.cu, 2026-11-26): cuModuleLoadData, cuMemFree and cuMemFreeHost wait
 *    for every running kernel while holding the context lock, which every other call of the
 *    mock takes shared (so the library's own copies wait behind them, as in the driver);
 *    the synchronous cuMemcpyHtoD waits for the kernels of the legacy stream and of blocking
 *    streams (flags 0). A wait longer than MOCK_CUDA_WAIT_S (default 10) seconds is a deadlock:
 *    the mock prints "mock libcuda: DEADLOCK: ..." naming the call and the kernel, and aborts;
 *  - contexts are one token per device, current per thread.
 * Not a CUDA emulator: anything else returns CUDA_ERROR_NOT_SUPPORTED (801).
 * Build: cc -shared -fPIC -O1 mock_libcuda.c -o libcuda.so.1 -lpthread */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sched.h>
#include <time.h>
#include <ishmem/device_state.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

#define OK 0
#define E_INVALID_VALUE 1
#define E_OOM 2
#define E_NOT_INITIALIZED 3
#define E_INVALID_DEVICE 101
#define E_INVALID_CONTEXT 201
#define E_NOT_FOUND 500
#define E_NOT_SUPPORTED 801

static int initialized;
static char ctx_tokens[16];
static __thread CUcontext cur_ctx;
static __thread CUcontext ctx_stack[8];
static __thread int ctx_depth;

struct region {
    uintptr_t dev, shadow;
    size_t len;
    int owned; /* allocated here (1) or opened from a handle (0) */
    char path[48];
};
static struct region regions[256];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int seq;

static int ndev(void) {
    const char *e = getenv("MOCK_CUDA_DEVICES");
    int n = e ? atoi(e) : 1;
    return n < 0 ? 0 : n > 16 ? 16 : n;
}

static void *shadow_of(uintptr_t a) {
    pthread_mutex_lock(&lock);
    void *r = (void *)a;
    for (int i = 0; i < 256; i++)
        if (regions[i].len && a >= regions[i].dev && a < regions[i].dev + regions[i].len) {
            r = (void *)(regions[i].shadow + (a - regions[i].dev));
            break;
        }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult need_ctx(void) {
    if (!initialized) return E_NOT_INITIALIZED;
    return cur_ctx ? OK : E_INVALID_CONTEXT;
}

static CUresult map_file(const char *path, size_t len, int owned, CUdeviceptr *out) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return E_INVALID_VALUE;
    void *dev = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);
    void *sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev == MAP_FAILED || sh == MAP_FAILED) return E_OOM;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < 256 && regions[i].len) i++;
    if (i == 256) {
        pthread_mutex_unlock(&lock);
        return E_OOM;
    }
    regions[i].dev = (uintptr_t)dev;
    regions[i].shadow = (uintptr_t)sh;
    regions[i].len = len;
    regions[i].owned = owned;
    snprintf(regions[i].path, sizeof regions[i].path, "%s", path);
    pthread_mutex_unlock(&lock);
    *out = (CUdeviceptr)(uintptr_t)dev;
    return OK;
}

static CUresult unmap_at(CUdeviceptr p, int owned) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 256; i++)
        if (regions[i].len && regions[i].dev == p && regions[i].owned == owned) {
            munmap((void *)regions[i].dev, regions[i].len);
            munmap((void *)regions[i].shadow, regions[i].len);
            if (owned) unlink(regions[i].path);
            regions[i].len = 0;
            pthread_mutex_unlock(&lock);
            return OK;
        }
    pthread_mutex_unlock(&lock);
    return E_INVALID_VALUE;
}

CUresult cuInit(unsigned flags) {
    (void)flags;
    if (ndev() == 0) return 100; /* CUDA_ERROR_NO_DEVICE */
    initialized = 1;
    return OK;
}
CUresult cuDeviceGetCount(int *n) { *n = initialized ? ndev() : 0; return initialized ? OK : E_NOT_INITIALIZED; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= ndev()) return E_INVALID_DEVICE;
    *d = ordinal;
    return OK;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = &ctx_tokens[d]; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return OK; }
CUresult cuCtxSetCurrent(CUcontext c) { cur_ctx = c; return OK; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = cur_ctx; return OK; }
CUresult cuCtxGetDevice(CUdevice *d) {
    if (!cur_ctx) return E_INVALID_CONTEXT;
    *d = (int)((char *)cur_ctx - ctx_tokens);
    return OK;
}
CUresult cuCtxPushCurrent_v2(CUcontext c) {
    if (ctx_depth == 8) return E_INVALID_VALUE;
    ctx_stack[ctx_depth++] = cur_ctx;
    cur_ctx = c;
    return OK;
}
CUresult cuCtxPopCurrent_v2(CUcontext *c) {
    if (ctx_depth == 0) return E_INVALID_CONTEXT;
    if (c) *c = cur_ctx;
    cur_ctx = ctx_stack[--ctx_depth];
    return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    (void)d;
    *v = attr == 41 ? 1 : attr == 11 /* MAX_PITCH */ ? 2147483647 : 0;
    return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) { snprintf(name, len, "Mock GPU %d", d); return OK; }
CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d) { snprintf(bus, len, "0000:%02x:00.0", 0x10 + d); return OK; }
/* ---- streams, running kernels and the context lock ---- */
struct job {
    CUfunction f;
    int nparams;
    uint64_t vals[12];
    void *ptrs[12];
    struct job *next;
};
struct mstream {
    unsigned flags;
    int started;
    pthread_t th;
    struct job *head, *tail;
    int pending; /* kernels queued or running */
};
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t run_cv = PTHREAD_COND_INITIALIZER;
static int running_all, running_blocking; /* kernels queued or running: all, on blocking streams */
static const char *running_name = "";      /* the kernel last started */
/* Held shared by every call that enqueues or reads, exclusively by the calls that wait for
 * every running kernel of the context (module loads, frees), as the driver's context lock. */
static pthread_rwlock_t ctx_rw = PTHREAD_RWLOCK_INITIALIZER;

static int wait_limit_s(void) {
    const char *e = getenv("MOCK_CUDA_WAIT_S");
    int n = e ? atoi(e) : 10;
    return n > 0 ? n : 10;
}

/* Waits (run_lock held) until no kernel counted by *count runs; a deadlock past the limit. */
static void wait_kernels(const char *call, int *count, const char *which) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_limit_s();
    while (*count > 0) {
        if (pthread_cond_timedwait(&run_cv, &run_lock, &until) != 0 && *count > 0) {
            fprintf(stderr,
                    "mock libcuda: [pid %d] DEADLOCK: %s waits for %d running kernel(s) (%s; %s, the last started) that have "
                    "not finished after %d s%s\n",
                    (int)getpid(), call, *count, which, running_name, wait_limit_s(),
                    count == &running_all ? "; it holds the context lock meanwhile (as the driver does), so the "
                                            "library's own copies and kernels, which a running kernel may wait for, "
                                            "cannot start"
                                          : "");
            fflush(stderr);
            abort();
        }
    }
}

/* A call that waits for every running kernel of the context, holding the context lock. */
static void ctx_exclusive_begin(const char *call) {
    pthread_rwlock_wrlock(&ctx_rw);
    pthread_mutex_lock(&run_lock);
    wait_kernels(call, &running_all, "every kernel of the context");
    pthread_mutex_unlock(&run_lock);
}
static void ctx_exclusive_end(void) { pthread_rwlock_unlock(&ctx_rw); }
static void ctx_shared_begin(void) { pthread_rwlock_rdlock(&ctx_rw); }
static void ctx_shared_end(void) { pthread_rwlock_unlock(&ctx_rw); }

static CUresult run_kernel(CUfunction f, void **params);

static void *stream_thread(void *arg) {
    struct mstream *ms = arg;
    for (;;) {
        pthread_mutex_lock(&run_lock);
        while (!ms->head) pthread_cond_wait(&run_cv, &run_lock);
        struct job *j = ms->head;
        pthread_mutex_unlock(&run_lock);
        run_kernel(j->f, j->ptrs);
        pthread_mutex_lock(&run_lock);
        ms->head = j->next;
        if (!ms->head) ms->tail = NULL;
        ms->pending--;
        running_all--;
        if (!(ms->flags & 1)) running_blocking--;
        pthread_cond_broadcast(&run_cv);
        pthread_mutex_unlock(&run_lock);
        free(j);
    }
    return NULL;
}

/* Queues kernel f on stream ms (params copied, as the driver copies them at launch). */
static CUresult enqueue_kernel(struct mstream *ms, CUfunction f, int nparams, void **params, const char *name) {
    struct job *j = calloc(1, sizeof *j);
    if (!j) return E_OOM;
    j->f = f;
    j->nparams = nparams;
    for (int i = 0; i < nparams && i < 12; i++) {
        memcpy(&j->vals[i], params[i], 8);
        j->ptrs[i] = &j->vals[i];
    }
    pthread_mutex_lock(&run_lock);
    if (!ms->started) {
        ms->started = 1;
        pthread_create(&ms->th, NULL, stream_thread, ms);
        pthread_detach(ms->th);
    }
    if (ms->tail) ms->tail->next = j;
    else ms->head = j;
    ms->tail = j;
    ms->pending++;
    running_all++;
    if (!(ms->flags & 1)) running_blocking++;
    running_name = name;
    pthread_cond_broadcast(&run_cv);
    pthread_mutex_unlock(&run_lock);
    return OK;
}

/* Stream order for the work the mock does at once: waits for the stream's queued kernels. */
static void drain(CUstream s) {
    if (!s) return;
    struct mstream *ms = s;
    pthread_mutex_lock(&run_lock);
    while (ms->pending > 0) pthread_cond_wait(&run_cv, &run_lock);
    pthread_mutex_unlock(&run_lock);
}

CUresult cuStreamCreate(CUstream *s, unsigned flags) {
    CUresult r = need_ctx();
    if (r) return r;
    struct mstream *ms = calloc(1, sizeof *ms);
    if (!ms) return E_OOM;
    ms->flags = flags;
    *s = ms;
    return OK;
}
CUresult cuStreamCreateWithPriority(CUstream *s, unsigned flags, int priority) {
    (void)priority;
    return cuStreamCreate(s, flags);
}
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return need_ctx();
}
CUresult cuStreamDestroy_v2(CUstream s) { (void)s; return OK; } /* kept: its thread may still run */
CUresult cuStreamSynchronize(CUstream s) {
    drain(s);
    return need_ctx();
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t len) {
    CUresult r = need_ctx();
    if (r) return r;
    char path[48];
    pthread_mutex_lock(&lock);
    snprintf(path, sizeof path, "/dev/shm/mockcuda-%d-%d", (int)getpid(), seq++);
    pthread_mutex_unlock(&lock);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return E_OOM;
    if (ftruncate(fd, (off_t)len) != 0) {
        close(fd);
        unlink(path);
        return E_OOM;
    }
    close(fd);
    /* Device memory is not zeroed by cuMemAlloc: fill with garbage to catch reliance on it. */
    r = map_file(path, len, 1, p);
    if (r == OK) memset(shadow_of(*p), 0xA5, len < (8u << 20) ? len : (8u << 20));
    return r;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
    ctx_exclusive_begin("cuMemFree");
    CUresult r = unmap_at(p, 1);
    ctx_exclusive_end();
    return r;
}
CUresult cuMemAllocHost_v2(void **p, size_t len) { *p = calloc(1, len); return *p ? OK : E_OOM; }
/* Page-locks host memory (the staging mailbox): nothing to do on the CPU beyond the checks a
 * driver makes (a mapped, non-empty range). */
CUresult cuMemHostRegister_v2(void *p, size_t len, unsigned flags) {
    (void)flags;
    if (!p || !len) return E_INVALID_VALUE;
    return OK;
}
CUresult cuMemFreeHost(void *p) {
    ctx_exclusive_begin("cuMemFreeHost");
    free(p);
    ctx_exclusive_end();
    return OK;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
    memset(h, 0, sizeof *h);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 256; i++)
        if (regions[i].len && regions[i].dev == p && regions[i].owned) {
            snprintf(h->reserved, 48, "%s", regions[i].path);
            memcpy(h->reserved + 48, &regions[i].len, sizeof(size_t));
            pthread_mutex_unlock(&lock);
            return OK;
        }
    pthread_mutex_unlock(&lock);
    return E_INVALID_VALUE;
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned flags) {
    (void)flags;
    CUresult r = need_ctx();
    if (r) return r;
    size_t len;
    memcpy(&len, h.reserved + 48, sizeof len);
    char path[49];
    memcpy(path, h.reserved, 48);
    path[48] = 0;
    return map_file(path, len, 0, p);
}
CUresult cuIpcCloseMemHandle(CUdeviceptr p) { return unmap_at(p, 0); }

/* Only CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2): device (2) inside a mock allocation, else the
 * driver's answer for memory it does not know (CUDA_ERROR_INVALID_VALUE). */
CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
    if (attr != 2) return 801;
    if (shadow_of((uintptr_t)p) == (void *)(uintptr_t)p) return 1;
    *(unsigned *)data = 2;
    return OK;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    CUresult r = need_ctx();
    if (r) return r;
    drain(s);
    ctx_shared_begin();
    memmove(shadow_of((uintptr_t)dst), shadow_of((uintptr_t)src), n);
    ctx_shared_end();
    return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    return cuMemcpyAsync(dst, (uintptr_t)src, n, s);
}
/* Synchronous: on the legacy default stream, after every kernel of it and of blocking streams. */
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    pthread_mutex_lock(&run_lock);
    wait_kernels("cuMemcpyHtoD (synchronous: the legacy default stream)", &running_blocking,
                 "kernels of the legacy stream and of blocking streams");
    pthread_mutex_unlock(&run_lock);
    return cuMemcpyAsync(dst, (uintptr_t)src, n, NULL);
}
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s) {
    CUresult r = need_ctx();
    if (r) return r;
    if (c->srcMemoryType != 4 || c->dstMemoryType != 4 || c->WidthInBytes > c->srcPitch || c->WidthInBytes > c->dstPitch)
        return E_INVALID_VALUE;
    drain(s);
    ctx_shared_begin();
    for (size_t i = 0; i < c->Height; i++)
        memmove(shadow_of((uintptr_t)(c->dstDevice + i * c->dstPitch)),
                shadow_of((uintptr_t)(c->srcDevice + i * c->srcPitch)), c->WidthInBytes);
    ctx_shared_end();
    return OK;
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
    CUresult r = need_ctx();
    if (r) return r;
    drain(s);
    ctx_shared_begin();
    memset(shadow_of((uintptr_t)p), v, n);
    ctx_shared_end();
    return OK;
}
CUresult cuMemsetD32Async(CUdeviceptr p, unsigned v, size_t n, CUstream s) {
    CUresult r = need_ctx();
    if (r) return r;
    drain(s);
    ctx_shared_begin();
    unsigned *d = shadow_of((uintptr_t)p);
    for (size_t i = 0; i < n; i++) d[i] = v;
    ctx_shared_end();
    return OK;
}

static char module_token, function_token, global_token[1024];
/* The kernels of the queue modules run here (index into emulated_names + 1 = the token's
 * offset in emulated_tokens), and one token for every other kernel of them. */
static const char *emulated_names[] = {"ishmemi_q_proxy_putmem", "ishmemi_q_proxy_getmem", "ishmemi_q_proxy_put_signal",
                                       "ishmemi_q_proxy_strided", "ishmemi_q_quiet", "ishmemi_q_putmem",
                                       "ishmemi_q_getmem"};
#define N_EMULATED (int)(sizeof emulated_names / sizeof emulated_names[0])
static char emulated_tokens[N_EMULATED], unsupported_token;
/* The one-kernel collectives of the collective queue module (cuda/coll_kernels.cu:
 * ishmemi_q_team_sync, _broadcast, _fcollect, _collect, _alltoall, _<op>_<type>) run here as
 * their work-group forms do for a team with a member on another node: one COLL request of the
 * proxy ring (cuda_coll.cuh: coll_post), the reply's status written to ret. Only where the job
 * spans nodes (a proxy ring); the whole-GPU slice and scan kernels are never emulated. */
typedef struct {
    int what, cls, width, op;
} coll_kernel_t;
static coll_kernel_t coll_kernels[128];
static char coll_tokens[128];
static int n_coll_kernels;
static int coll_kernel(const char *name) {
    static const char *moves[] = {"team_sync", "broadcast", "fcollect", "collect", "alltoall"};
    static const int move_what[] = {ISHMEMI_COLL_SYNC, ISHMEMI_COLL_BROADCAST, ISHMEMI_COLL_FCOLLECT,
                                    ISHMEMI_COLL_COLLECT, ISHMEMI_COLL_ALLTOALL};
    static const char *ops[] = {"and", "or", "xor", "max", "min", "sum", "prod"}; /* ISHMEMI_COLL_OP_* order */
    static const struct {
        const char *suffix;
        int cls, width;
    } types[] = {{"i8", ISHMEMI_COLL_T_SIGNED, 1},   {"u8", ISHMEMI_COLL_T_UNSIGNED, 1},
                 {"i16", ISHMEMI_COLL_T_SIGNED, 2},  {"u16", ISHMEMI_COLL_T_UNSIGNED, 2},
                 {"i32", ISHMEMI_COLL_T_SIGNED, 4},  {"u32", ISHMEMI_COLL_T_UNSIGNED, 4},
                 {"i64", ISHMEMI_COLL_T_SIGNED, 8},  {"u64", ISHMEMI_COLL_T_UNSIGNED, 8},
                 {"f32", ISHMEMI_COLL_T_FLOAT, 4},   {"f64", ISHMEMI_COLL_T_FLOAT, 8}};
    if (strncmp(name, "ishmemi_q_", 10)) return -1;
    const char *rest = name + 10;
    coll_kernel_t k = {-1, 0, 1, 0};
    for (int i = 0; i < 5; i++)
        if (!strcmp(rest, moves[i])) k.what = move_what[i];
    for (int o = 0; o < 7 && k.what < 0; o++) {
        size_t l = strlen(ops[o]);
        if (strncmp(rest, ops[o], l) || rest[l] != '_') continue;
        for (int t = 0; t < 10; t++)
            if (!strcmp(rest + l + 1, types[t].suffix))
                k = (coll_kernel_t){ISHMEMI_COLL_REDUCE, types[t].cls, types[t].width, o};
    }
    if (k.what < 0) return -1;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < n_coll_kernels && memcmp(&coll_kernels[i], &k, sizeof k)) i++;
    if (i == n_coll_kernels && i < 128) coll_kernels[n_coll_kernels++] = k;
    pthread_mutex_unlock(&lock);
    return i < 128 ? i : -1;
}
/* The library's modules, and a test's module that holds the device state (ishmemi_dstate). */
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    if (!strstr((const char *)image, "ishmemi_host_amo") && !strstr((const char *)image, ".entry ishmemi_q_") &&
        !strstr((const char *)image, "ishmemi_dstate"))
        return E_INVALID_VALUE;
    CUresult r = need_ctx();
    if (r) return r;
    ctx_exclusive_begin("cuModuleLoadData");
    *m = &module_token;
    ctx_exclusive_end();
    return OK;
}
CUresult cuModuleUnload(CUmodule m) { (void)m; return OK; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    (void)m;
    if (!strcmp(name, "ishmemi_host_amo")) {
        *f = &function_token;
        return OK;
    }
    for (int i = 0; i < N_EMULATED; i++)
        if (!strcmp(name, emulated_names[i])) {
            *f = &emulated_tokens[i];
            return OK;
        }
    int c = coll_kernel(name);
    if (c >= 0) {
        *f = &coll_tokens[c];
        return OK;
    }
    if (strncmp(name, "ishmemi_q", 9)) return E_NOT_FOUND; /* ishmemi_q_*, ishmemi_qs_*, ishmemi_qscan_* */
    *f = &unsupported_token;
    return OK;
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name) {
    (void)m;
    if (strcmp(name, "ishmemi_dstate")) return E_NOT_FOUND;
    *p = (CUdeviceptr)(uintptr_t)global_token;
    *bytes = 560;
    return OK;
}

#define AMO(T)                                                                                   \
    do {                                                                                         \
        T *p = (T *)t, v = (T)value, c = (T)cond, old;                                           \
        switch (op) {                                                                            \
        case 0: old = __atomic_load_n(p, __ATOMIC_SEQ_CST); break;                              \
        case 1: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); old = 0; break;                       \
        case 2: old = __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); break;                       \
        case 3: __atomic_compare_exchange_n(p, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); old = c; break; \
        case 4: old = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); break;                        \
        case 5: old = __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); break;                        \
        case 6: old = __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); break;                         \
        case 7: old = __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); break;                        \
        default: return E_INVALID_VALUE;                                                         \
        }                                                                                        \
        res = (uint64_t)old;                                                                     \
    } while (0)

/* ---- the device's proxy poster (cuda_impl.cuh), for the emulated kernels ---- */
static ishmemi_dev_state_t *dstate(void) { return (ishmemi_dev_state_t *)(void *)global_token; }
static volatile uint64_t *pslot(uint64_t t) {
    return ((volatile ishmemi_proxy_slot_t *)(uintptr_t)dstate()->proxy_ring)[t % ISHMEMI_PROXY_SLOTS].w;
}
/* proxy_take + proxy_publish, then proxy_wait when `wait`: returns the reply. */
static uint64_t ppost(int wait, uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4, uint64_t w5, uint64_t w6) {
    ishmemi_dev_state_t *d = dstate();
    uint64_t *ticket = (uint64_t *)shadow_of((uintptr_t)(d->heap_base + d->sync_offset + 8 * ISHMEMI_SYNC_PROXY_TICKET));
    uint64_t t = __atomic_fetch_add(ticket, 1, __ATOMIC_SEQ_CST);
    volatile uint64_t *s = pslot(t);
    if (t >= ISHMEMI_PROXY_SLOTS)
        while (__atomic_load_n(&s[7], __ATOMIC_ACQUIRE) != t - ISHMEMI_PROXY_SLOTS + 1) sched_yield();
    s[1] = w1, s[2] = w2, s[3] = w3, s[4] = w4, s[5] = w5, s[6] = w6;
    __atomic_store_n(&s[0], t + 1, __ATOMIC_RELEASE);
    if (!wait) return 0;
    /* The reply: both words carry the tag (device_state.h), read word 6 first as the device
     * may; the slot is released in word 7, which the device's take accepts too. */
    const uint64_t tag = ISHMEMI_PROXY_HELD | ((t + 1) & 0x7fffffffull) << 32;
    uint64_t lo, hi;
    for (;;) {
        lo = __atomic_load_n(&s[6], __ATOMIC_RELAXED);
        hi = __atomic_load_n(&s[7], __ATOMIC_ACQUIRE);
        if (!(((lo ^ tag) | (hi ^ tag)) >> 32)) break;
        sched_yield();
    }
    __atomic_store_n(&s[7], t + 1, __ATOMIC_RELEASE);
    return (lo & 0xffffffffull) | hi << 32;
}
static uint64_t pw1(int kind, unsigned width, int op, int reply, int pe) {
    return (uint64_t)kind | (uint64_t)width << 8 | (uint64_t)(op & 0xff) << 16 | (reply ? ISHMEMI_PROXY_REPLY : 0) |
           (uint64_t)(uint32_t)pe << 32;
}
#define P64(i) (*(uint64_t *)params[i])
#define PINT(i) (*(int *)params[i])
static CUresult emulate(int k, void **params) {
    switch (k) {
    case 0: /* putmem(dest, src, bytes, pe): a blocking put */
        if (P64(2)) ppost(1, pw1(ISHMEMI_PROXY_PUT, 0, 0, 1, PINT(3)), P64(0), P64(1), P64(2), 0, 0);
        return OK;
    case 1: /* getmem(dest, src, bytes, pe) */
        if (P64(2)) ppost(1, pw1(ISHMEMI_PROXY_GET, 0, 0, 1, PINT(3)), P64(1), P64(0), P64(2), 0, 0);
        return OK;
    case 2: /* put_signal(dest, src, bytes, sig, value, sig_op, pe): one request */
        ppost(1, pw1(ISHMEMI_PROXY_PUT_SIGNAL, 8, PINT(5), 1, PINT(6)), P64(0), P64(1), P64(2), P64(4), P64(3));
        return OK;
    case 3: { /* strided(is_put, dest, src, dst, sst, bsize, nblocks, elem, pe): a request per block */
        int put = PINT(0), pe = PINT(8);
        uint64_t dest = P64(1), src = P64(2), dst = P64(3), sst = P64(4), bsize = P64(5), nb = P64(6), elem = P64(7);
        for (uint64_t b = 0; b < nb; b++) {
            uint64_t d = dest + b * dst * elem, s = src + b * sst * elem;
            if (put) ppost(b + 1 == nb, pw1(ISHMEMI_PROXY_PUT, 0, 0, b + 1 == nb, pe), d, s, bsize * elem, 0, 0);
            else ppost(1, pw1(ISHMEMI_PROXY_GET, 0, 0, 1, pe), s, d, bsize * elem, 0, 0);
        }
        return OK;
    }
    case 4: /* quiet: a proxy quiet (the device skips it when nothing was posted since) */
        if (dstate()->proxy_ring) ppost(1, pw1(ISHMEMI_PROXY_QUIET, 0, 0, 1, dstate()->my_pe), 0, 0, 0, 0, 0);
        return OK;
    case 5:   /* the SM copy kernels of the mapped on-queue put(dest, src, bytes, pe) */
    case 6: { /* and get(dest, src, bytes, pe): the symmetric side translated as the device does */
        ishmemi_dev_state_t *d = dstate();
        int pe = PINT(3);
        uint64_t sym = P64(k == 5 ? 0 : 1), n = P64(2);
        if (pe < 0 || pe >= d->n_pes || pe >= ISHMEMI_MAX_LOCAL_PES || !d->peer_base[pe] || sym < d->heap_base ||
            sym - d->heap_base > d->heap_size || n > d->heap_size - (sym - d->heap_base))
            return 719; /* CUDA_ERROR_LAUNCH_FAILED: the device check traps */
        uint64_t r = d->peer_base[pe] + (sym - d->heap_base);
        if (k == 5) memmove(shadow_of((uintptr_t)r), shadow_of((uintptr_t)P64(1)), n);
        else memmove(shadow_of((uintptr_t)P64(0)), shadow_of((uintptr_t)r), n);
        return OK;
    }
    }
    return E_NOT_SUPPORTED;
}

/* A collective queue kernel (coll_kernel): params are (team, dest, src, bytes, [root,] ret) for
 * the data moves, (team, dest, src, nelems, mode, ret) for reductions and scans (mode 0 reduce,
 * 1 inscan, 2 exscan), (team, ret) for team_sync. */
static CUresult emulate_coll(const coll_kernel_t *k, void **params) {
    if (!dstate()->proxy_ring) return E_NOT_SUPPORTED;
    int team = PINT(0), what = k->what, root = 0, op = k->op;
    uint64_t dest = 0, src = 0, n = 0, ret;
    if (what == ISHMEMI_COLL_SYNC) {
        ret = P64(1);
    } else {
        dest = P64(1), src = P64(2), n = P64(3);
        if (what == ISHMEMI_COLL_BROADCAST) root = PINT(4), ret = P64(5);
        else if (what == ISHMEMI_COLL_REDUCE) {
            int mode = PINT(4);
            what = mode == 1 ? ISHMEMI_COLL_INSCAN : mode == 2 ? ISHMEMI_COLL_EXSCAN : ISHMEMI_COLL_REDUCE;
            ret = P64(5);
        } else ret = P64(4);
    }
    uint64_t w6 = (uint64_t)(uint32_t)team | (uint64_t)what << 32 | (uint64_t)k->cls << 40;
    int rc = (int)ppost(1, pw1(ISHMEMI_PROXY_COLL, k->width, op, 1, dstate()->my_pe), dest, src, n,
                        (uint64_t)(uint32_t)root, w6);
    if (ret) *(int *)shadow_of((uintptr_t)ret) = rc;
    return OK;
}

/* Parameters of the emulated kernels (the library's launches). */
static const int emulated_nparams[] = {4, 4, 7, 9, 0, 4, 4};

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, CUstream s, void **params, void **extra) {
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)extra;
    CUresult r = need_ctx();
    if (r) return r;
    if (f == &unsupported_token) return E_NOT_SUPPORTED;
    if (s) {
        /* An emulated kernel on a created stream runs asynchronously, in stream order. */
        for (int i = 0; i < N_EMULATED; i++)
            if (f == &emulated_tokens[i]) return enqueue_kernel(s, f, emulated_nparams[i], params, emulated_names[i]);
        if ((char *)f >= coll_tokens && (char *)f < coll_tokens + 128) {
            const coll_kernel_t *k = &coll_kernels[(char *)f - coll_tokens];
            int n = k->what == ISHMEMI_COLL_SYNC ? 2 : k->what == ISHMEMI_COLL_BROADCAST || k->what == ISHMEMI_COLL_REDUCE ? 6 : 5;
            return enqueue_kernel(s, f, n, params, k->what == ISHMEMI_COLL_SYNC ? "ishmemi_q_team_sync" : "ishmemi_q_<collective>");
        }
        drain(s);
    }
    ctx_shared_begin();
    r = run_kernel(f, params);
    ctx_shared_end();
    return r;
}

/* Runs kernel f now, on the calling thread. */
static CUresult run_kernel(CUfunction f, void **params) {
    for (int i = 0; i < N_EMULATED; i++)
        if (f == &emulated_tokens[i]) return emulate(i, params);
    if ((char *)f >= coll_tokens && (char *)f < coll_tokens + 128) return emulate_coll(&coll_kernels[(char *)f - coll_tokens], params);
    if (f != &function_token) return E_INVALID_VALUE;
    uint64_t addr = *(uint64_t *)params[0];
    unsigned width = *(unsigned *)params[1], op = *(unsigned *)params[2];
    uint64_t value = *(uint64_t *)params[3], cond = *(uint64_t *)params[4];
    uint64_t *result = *(uint64_t **)params[5];
    void *t = shadow_of((uintptr_t)addr);
    if ((uintptr_t)addr % width) return 716; /* CUDA_ERROR_MISALIGNED_ADDRESS */
    uint64_t res = 0;
    switch (width) {
    case 1: AMO(uint8_t); break;
    case 4: AMO(uint32_t); break;
    case 8: AMO(uint64_t); break;
    default: return E_INVALID_VALUE;
    }
    *(uint64_t *)shadow_of((uintptr_t)result) = res;
    return OK;
}

CUresult cuGetErrorName(CUresult e, const char **s) {
    static char buf[32];
    snprintf(buf, sizeof buf, "CUDA_ERROR_MOCK_%d", e);
    *s = buf;
    return OK;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
    (void)e;
    *s = "mock driver error";
    return OK;
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
