/* mock_queue_remote.c: the on-queue RMA forms to a PE of another node without a GPU. Run by
 * scripts/mock-gpu-check.sh against tests/gpu/mock_libcuda.c with the PEs split into 2 pretend
 * nodes: libishmem enqueues its one-thread proxy kernels (cuda/queue_remote_kernels.cu), which
 * the mock runs on the launching thread as the device does (posting into the proxy ring and
 * waiting), and the proxy thread runs the requests through the network to the other node's GPU
 * heap. Checks the values: putmem (source in this PE's GPU heap, then in host memory), getmem
 * (into host memory and into the GPU heap), put_signal SET and ADD (data there when the signal
 * is seen), iput, ibput, iget, ibget, each completed by quiet_on_queue (a proxy quiet) and
 * read back with the host API; then the on-queue collectives of the world team and of a
 * duplicate of it (team_sync, broadcast, fcollect, collect, alltoall, long sum, double max,
 * uint64 xor, int inscan/exscan, an in-place sum, a host reduction after them), which go
 * through the proxy ring as one COLL request each (the mock runs the one-kernel collective as
 * its post). The stream is NULL (the mock's streams are synchronous). With
 * an argument, a bad call whose error message the caller checks: "bad_global" (a put to a
 * symmetric global of a PE of another node), "bad_sym" (dest not symmetric); "quiet": the rounds
 * of quiet_rounds below instead of the checks; "quiet_stopped": those of quiet_stopped below.
 * Build: cc mock_queue_remote.c -I$PREFIX/include -L$PREFIX/lib -lishmem */
#define _GNU_SOURCE
#include <ishmem.h>
#include <ishmemx.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpu_test.h"

#define BYTES 4096
static int me, npes, far;
static char *sym; /* symmetric (GPU heap: the host reaches it through the API only) */
static uint64_t *sig;
static char host[BYTES], back[BYTES];
static long global_long; /* symmetric data segment */

static unsigned char pat(int pe, int k) { return (unsigned char)(pe * 37 + k * 11 + 1); }

/* This PE's sym filled with pattern k, and the host buffer with pattern k ^ 0x5a; all PEs. */
static void prepare(int k) {
    memset(host, pat(me, k), BYTES);
    ishmem_putmem(sym, host, BYTES, me);
    memset(host, pat(me, k) ^ 0x5a, BYTES);
    ishmem_barrier_all();
}

/* n bytes at PE pe's sym + off, every `stride` bytes `width` bytes, hold v. */
static void expect_at(const char *what, int pe, size_t off, size_t n, size_t stride, size_t width, unsigned char v) {
    ishmem_getmem(back, sym + off, n, pe);
    size_t bad = 0;
    for (size_t i = 0; i < n; i += stride)
        for (size_t j = 0; j < width && i + j < n; j++) bad += (unsigned char)back[i + j] != v;
    CHECK(bad == 0, "%s: %zu bytes differ from %d (e.g. %d)", what, bad, v, (unsigned char)back[0]);
}

/* "quiet" (4 PEs, issue 26: the mutant whose proxy quiet does not wait). In round r the PEs
 * of one node write (node r % 2; the other node's PEs read): each writer puts QB bytes from
 * host memory to far's GPU heap with putmem_nbi_on_queue, then quiet_on_queue (a proxy quiet),
 * then tells two PEs by flags on paths of their own:
 * - far itself, by a flag in far's symmetric data segment (a direct network write that does not
 *   go through far's staging mailbox): far, already waiting, reads the bytes from its own GPU
 *   heap (a local GPU copy). Until the quiet has waited for the mailbox's replies the put's
 *   requests may still be in far's inbox, unapplied, when the flag lands;
 * - its node peer (me ^ 1, a writer too), by a flag in the peer's GPU heap; the peer reads the
 *   bytes from far through its own mailbox requests.
 * Both must see every byte. The readers read the block's last 64 bytes first (the last bytes
 * the target's copy writes), then the rest. */
enum { QB = 65536, QROUNDS = 100 };
static unsigned char qh[QB], qb[QB];
static long qflag[4]; /* symmetric data segment: far's flag from the PE that puts to it */
static int quiet_check(int r, int from, int at, const char *how) {
    static int printed;
    size_t bad = 0;
    unsigned char v = (unsigned char)(r * 13 + from * 3 + 1);
    for (size_t i = 0; i < QB; i++) bad += qb[i] != v;
    if (bad && ++printed <= 4)
        fprintf(stderr, "FAIL: [PE %d] round %d: %zu of %d bytes PE %d put to PE %d before its quiet_on_queue are not there with its flag (%s)\n",
                me, r, bad, QB, from, at, how);
    return bad != 0;
}
static int quiet_rounds(void) {
    CHECK(npes == 4, "quiet needs 4 PEs (got %d)", npes);
    char *big = (char *)ishmem_malloc((size_t)npes * QB);
    long *qf = (long *)ishmem_calloc((size_t)npes, sizeof(long));
    ishmemx_queue_t q = NULL;
    int w = me ^ 1, wfar = (w + npes / 2) % npes, src = far, wrong_far = 0, wrong_peer = 0, node = me >= npes / 2;
    ishmem_barrier_all();
    for (int r = 1; r <= QROUNDS && npes == 4; r++) {
        if (node == r % 2) { /* a writer */
            memset(qh, (unsigned char)(r * 13 + me * 3 + 1), QB);
            ishmemx_putmem_nbi_on_queue(big + (size_t)me * QB, qh, QB, far, q);
            ishmemx_quiet_on_queue(q);
            ishmem_long_p(&qflag[me], r, far);
            ishmem_long_p(&qf[me], r, me ^ 1);
            /* the node peer's view, through far's mailbox */
            ishmem_long_wait_until(&qf[w], ISHMEM_CMP_GE, r);
            ishmem_getmem(qb + QB - 64, big + (size_t)w * QB + QB - 64, 64, wfar);
            ishmem_getmem(qb, big + (size_t)w * QB, QB - 64, wfar);
            wrong_peer += quiet_check(r, w, wfar, "read by a node peer of the putter through the target's mailbox");
        } else { /* far's view: src's bytes in this PE's own heap once src's flag is here */
            ishmem_long_wait_until(&qflag[src], ISHMEM_CMP_GE, r);
            ishmem_getmem(qb + QB - 64, big + (size_t)src * QB + QB - 64, 64, me);
            ishmem_getmem(qb, big + (size_t)src * QB, QB - 64, me);
            wrong_far += quiet_check(r, src, me, "read by the target from its own GPU heap");
        }
        ishmem_barrier_all();
    }
    CHECK(wrong_far == 0 && wrong_peer == 0,
          "putmem_nbi_on_queue + quiet_on_queue + flag on another path: %d of %d rounds wrong at the target, %d of %d at the node peer",
          wrong_far, QROUNDS / 2, wrong_peer, QROUNDS / 2);
    ishmem_free(qf);
    ishmem_free(big);
    ishmem_finalize();
    return gpu_test_end("mock_queue_remote quiet");
}

/* "quiet_stopped" (4 PEs on 2 nodes of 2; issue 26: the mutant proxy_quiet_noop, killed without
 * a race). In round r (1 and 2) the writer W (PE 0, then PE 2) puts SB bytes from host memory
 * to the GPU heap of F = W + 2 (the other node) with putmem_nbi_on_queue, then calls
 * quiet_on_queue (a proxy quiet), then sets the flag `qs_returned` of H = F ^ 1 (F's node
 * peer). H has stopped F with SIGSTOP before W starts, so F's mailbox server cannot apply the
 * put's request: a quiet that waits for the put's completion cannot return while F is
 * stopped. H watches for W's flag for HOLD_S seconds; a flag in that time is the failure (and H
 * counts the bytes of the put not yet in F's heap, read through the node's mapping). Then H
 * resumes F (SIGCONT), W's quiet returns, its flag comes, and H releases F, which checks that
 * every byte is in its heap. A quiet that waits fails nothing however slow the machine (it
 * cannot return while F is stopped); one that does not wait is seen unless W takes HOLD_S
 * seconds to set a flag. */
enum { SB = 4096, HOLD_S = 3 };
static int qs_pid;
static long qs_stopped, qs_returned, qs_ready, qs_release;
static char proc_state(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int quiet_stopped(void) {
    CHECK(npes == 4, "quiet_stopped needs 4 PEs (got %d)", npes);
    char *big = (char *)ishmem_calloc((size_t)npes, SB);
    ishmemx_queue_t q = NULL;
    qs_pid = (int)getpid();
    ishmem_barrier_all();
    for (int r = 1; r <= 2 && npes == 4 && big; r++) {
        int W = r == 1 ? 0 : 2, F = (W + 2) % 4, H = F ^ 1;
        unsigned char v = (unsigned char)(r * 29 + 7);
        if (me == F) {
            /* stopped by H from here until H releases it: no library call meanwhile */
            ishmem_long_p(&qs_ready, r, H);
            while (*(volatile long *)&qs_release < r) usleep(1000);
            ishmem_getmem(qb, big + (size_t)W * SB, SB, me);
            size_t bad = 0;
            for (size_t i = 0; i < SB; i++) bad += qb[i] != v;
            CHECK(bad == 0, "round %d: %zu of %d bytes PE %d put before its quiet_on_queue are not in this PE's GPU heap "
                  "after the quiet returned", r, bad, SB, W);
        } else if (me == H) {
            ishmem_long_wait_until(&qs_ready, ISHMEM_CMP_GE, r);
            int pid = ishmem_int_g(&qs_pid, F);
            CHECK(kill(pid, SIGSTOP) == 0, "round %d: SIGSTOP to PE %d (pid %d) failed", r, F, pid);
            while (proc_state(pid) != 'T' && proc_state(pid) != 't') usleep(1000);
            ishmem_long_p(&qs_stopped, r, W);
            ishmem_quiet();
            double end = now_s() + HOLD_S;
            while (now_s() < end && !ishmem_long_test(&qs_returned, ISHMEM_CMP_GE, r)) usleep(2000);
            if (ishmem_long_test(&qs_returned, ISHMEM_CMP_GE, r)) {
                size_t bad = 0;
                ishmem_getmem(qb, big + (size_t)W * SB, SB, F);
                for (size_t i = 0; i < SB; i++) bad += qb[i] != v;
                fprintf(stderr, "FAIL: [PE %d] round %d: quiet_on_queue on PE %d returned while PE %d, the target of its "
                        "putmem_nbi_on_queue, was stopped (%zu of %d bytes not in PE %d's GPU heap)\n",
                        me, r, W, F, bad, SB, F);
                gt_fails++;
            }
            CHECK(kill(pid, SIGCONT) == 0, "round %d: SIGCONT to PE %d (pid %d) failed", r, F, pid);
            ishmem_long_wait_until(&qs_returned, ISHMEM_CMP_GE, r);
            ishmem_long_p(&qs_release, r, F);
        } else if (me == W) {
            ishmem_long_wait_until(&qs_stopped, ISHMEM_CMP_GE, r);
            memset(qh, v, SB);
            ishmemx_putmem_nbi_on_queue(big + (size_t)W * SB, qh, SB, F, q);
            ishmemx_quiet_on_queue(q);
            ishmem_long_p(&qs_returned, r, H);
            ishmem_quiet();
        }
        ishmem_barrier_all();
    }
    ishmem_free(big);
    ishmem_finalize();
    return gpu_test_end("mock_queue_remote quiet_stopped");
}

int main(int argc, char **argv) {
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    gt_me = me;
    CHECK(ishmemx_gpu_in_use() == 1, "GPU backend expected");
    far = (me + npes / 2) % npes;
    CHECK(npes % 2 == 0 && ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, far, ISHMEM_TEAM_SHARED) < 0,
          "PE %d expected on another node (run with ISHMEM_NODE_SPLIT=2)", far);
    sym = (char *)ishmem_malloc(BYTES);
    sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    ishmemx_queue_t q = NULL;
    if (argc > 1 && !strcmp(argv[1], "quiet"))
        return quiet_rounds();
    if (argc > 1 && !strcmp(argv[1], "quiet_stopped"))
        return quiet_stopped();
    if (argc > 1) {
        if (!strcmp(argv[1], "bad_global")) ishmemx_long_put_on_queue(&global_long, (long *)host, 1, far, q);
        if (!strcmp(argv[1], "bad_sym")) ishmemx_putmem_on_queue(malloc(64), host, 64, far, q);
        ishmemx_quiet_on_queue(q);
        ishmem_finalize();
        return 0; /* the bad call should have ended the job */
    }
    int k = 0;

    /* putmem from this PE's GPU heap (device memory: the proxy copies it through a host
     * buffer), then from host memory; quiet_on_queue, then a host get of the target */
    prepare(++k);
    ishmemx_putmem_on_queue(sym + 1024, sym, 1024, far, q);
    ishmemx_putmem_nbi_on_queue(sym + 2048, host, 1024, far, q);
    ishmemx_quiet_on_queue(q);
    expect_at("putmem_on_queue from the GPU heap (other node)", far, 1024, 1024, 1, 1, pat(me, k));
    expect_at("putmem_nbi_on_queue from host memory (other node)", far, 2048, 1024, 1, 1, pat(me, k) ^ 0x5a);
    ishmem_barrier_all();

    /* getmem into host memory and into this PE's GPU heap */
    prepare(++k);
    memset(back, 0, BYTES);
    ishmemx_getmem_on_queue(back, sym, 512, far, q);
    size_t bad = 0;
    for (int i = 0; i < 512; i++) bad += (unsigned char)back[i] != pat(far, k);
    CHECK(bad == 0, "getmem_on_queue into host memory (other node): %zu bytes differ", bad);
    ishmemx_getmem_nbi_on_queue(sym + 3072, sym + 8, 512, far, q);
    ishmemx_quiet_on_queue(q);
    expect_at("getmem_nbi_on_queue into the GPU heap (other node)", me, 3072, 512, 1, 1, pat(far, k));
    ishmem_barrier_all();

    /* put_signal: SET 7 with 100 bytes, then ADD 5 with 64 longs (nbi); the data is here once
     * the signal is */
    prepare(++k);
    ishmemx_putmem_signal_on_queue(sym + 100, host, 100, sig, 7, ISHMEM_SIGNAL_SET, far, q);
    ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 7);
    expect_at("putmem_signal_on_queue (other node)", me, 100, 100, 1, 1, pat(far, k) ^ 0x5a);
    ishmem_barrier_all(); /* every PE saw 7 before any adds */
    ishmemx_long_put_signal_nbi_on_queue((long *)(sym + 1024), (long *)(sym + 512), 64, sig, 5, ISHMEM_SIGNAL_ADD, far, q);
    ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, 12); /* far may have added 1 already */
    expect_at("long_put_signal_nbi_on_queue (other node)", me, 1024, 512, 1, 1, pat(far, k));
    ishmemx_putmem_signal_on_queue(NULL, NULL, 0, sig, 1, ISHMEM_SIGNAL_ADD, far, q);
    ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 13);
    ishmem_barrier_all();

    /* strided: iput 8 ints every 3rd from host memory; ibput 4 blocks of 2 longs, 4 apart
     * there, from the GPU heap (2 apart); iget 8 shorts every 2nd into host memory (every 3rd
     * there); ibget 3 blocks of 3 bytes into the GPU heap */
    prepare(++k);
    memset(back, 0, BYTES);
    ishmem_putmem(sym + 2048, back, 1024, me); /* zeros where the puts land */
    ishmem_barrier_all();
    for (int i = 0; i < 8; i++) ((int *)host)[i] = me * 1000 + i;
    ishmemx_int_iput_on_queue((int *)(sym + 2048), (int *)host, 3, 1, 8, far, q);
    ishmemx_ibput64_on_queue(sym + 2560, sym, 4, 2, 2, 4, far, q);
    ishmemx_quiet_on_queue(q);
    ishmem_barrier_all();
    int iv[24];
    ishmem_getmem(iv, sym + 2048, sizeof iv, me);
    bad = 0;
    for (int i = 0; i < 24; i++) bad += iv[i] != (i % 3 ? 0 : far * 1000 + i / 3);
    CHECK(bad == 0, "int_iput_on_queue (other node): %zu ints wrong (e.g. [3] = %d)", bad, iv[3]);
    for (int b = 0; b < 4; b++) {
        expect_at("ibput64_on_queue blocks (other node)", me, 2560 + 32 * b, 16, 1, 1, pat(far, k));
        expect_at("ibput64_on_queue gaps (other node)", me, 2560 + 32 * b + 16, 16, 1, 1, 0);
    }
    short sv[16];
    memset(sv, 0, sizeof sv);
    for (int i = 0; i < 8; i++) {
        short v = (short)(far * 100 + i);
        ishmem_putmem(sym + 3072 + 6 * i, &v, 2, far); /* far's shorts, every 3rd */
    }
    ishmem_barrier_all();
    ishmemx_short_iget_on_queue(sv, (short *)(sym + 3072), 2, 3, 8, far, q);
    bad = 0;
    for (int i = 0; i < 16; i++) bad += sv[i] != (i % 2 ? 0 : (short)(far * 100 + i / 2));
    CHECK(bad == 0, "short_iget_on_queue (other node): %zu shorts wrong", bad);
    ishmemx_ibget8_on_queue(sym + 3584, sym, 4, 5, 3, 3, far, q);
    ishmemx_quiet_on_queue(q);
    for (int b = 0; b < 3; b++) expect_at("ibget8_on_queue (other node)", me, 3584 + 4 * b, 3, 1, 1, pat(far, k));
    ishmem_barrier_all();

    /* On-queue collectives of teams spanning the nodes (the one-kernel path, whose work-group
     * form posts one COLL request; the mock runs the kernel as that post), on the world team
     * and on a duplicate of it; the status lands in a GPU-heap int (ret). */
    {
        int *ret = (int *)ishmem_malloc(sizeof(int));
        long *src = (long *)ishmem_malloc(64 * sizeof(long)), *dst = (long *)ishmem_malloc(64 * 64 * sizeof(long));
        ishmem_team_t dup;
        CHECK(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &dup) == 0, "team split");
        ishmem_team_t teams[2] = {ISHMEM_TEAM_WORLD, dup};
        long h[64], got[64 * 64];
        int rc;
#define RET_OK(what)                                                                                \
    do {                                                                                            \
        rc = -7;                                                                                    \
        ishmem_getmem(&rc, ret, sizeof rc, me);                                                     \
        CHECK(rc == 0, "%s on queue (team %d): ret %d", what, ti, rc);                              \
        rc = -7;                                                                                    \
        ishmem_putmem(ret, &rc, sizeof rc, me);                                                     \
    } while (0)
/* this PE's source from h (n bytes), its dest zeroed, every PE ready */
#define PREP(h, n)                                                                                  \
    do {                                                                                            \
        ishmem_putmem(src, h, n, me);                                                               \
        memset(got, 0, sizeof got);                                                                 \
        ishmem_putmem(dst, got, sizeof got, me);                                                    \
        ishmem_barrier_all();                                                                       \
    } while (0)
        for (int ti = 0; ti < 2; ti++) {
            ishmem_team_t t = teams[ti];
            ishmemx_team_sync_on_queue(t, ret, q);
            RET_OK("team_sync");
            /* broadcast 10 longs from team PE 1 */
            for (int i = 0; i < 10; i++) h[i] = me * 100 + i + ti;
            PREP(h, 10 * sizeof(long));
            ishmemx_long_broadcast_on_queue(t, dst, src, 10, 1, ret, q);
            RET_OK("long_broadcast");
            ishmem_getmem(got, dst, 10 * sizeof(long), me);
            bad = 0;
            for (int i = 0; i < 10; i++) bad += got[i] != 100 + i + ti;
            CHECK(bad == 0, "long_broadcast_on_queue (team %d): %zu wrong", ti, bad);
            /* fcollect 3 longs per PE */
            for (int i = 0; i < 3; i++) h[i] = me * 10 + i;
            PREP(h, 3 * sizeof(long));
            ishmemx_long_fcollect_on_queue(t, dst, src, 3, ret, q);
            RET_OK("long_fcollect");
            ishmem_getmem(got, dst, 3 * (size_t)npes * sizeof(long), me);
            bad = 0;
            for (int p = 0; p < npes; p++)
                for (int i = 0; i < 3; i++) bad += got[3 * p + i] != p * 10 + i;
            CHECK(bad == 0, "long_fcollect_on_queue (team %d): %zu wrong", ti, bad);
            /* collect: PE i gives i + 1 longs */
            for (int i = 0; i <= me; i++) h[i] = me * 1000 + i;
            PREP(h, (size_t)(me + 1) * sizeof(long));
            ishmemx_long_collect_on_queue(t, dst, src, (size_t)me + 1, ret, q);
            RET_OK("long_collect");
            ishmem_getmem(got, dst, (size_t)npes * (npes + 1) / 2 * sizeof(long), me);
            bad = 0;
            for (int p = 0, at = 0; p < npes; p++)
                for (int i = 0; i <= p; i++, at++) bad += got[at] != p * 1000 + i;
            CHECK(bad == 0, "long_collect_on_queue (team %d): %zu wrong", ti, bad);
            /* alltoall 2 longs per pair */
            for (int p = 0; p < npes; p++) h[2 * p] = me * 100 + p, h[2 * p + 1] = -(me * 100 + p);
            PREP(h, 2 * (size_t)npes * sizeof(long));
            ishmemx_long_alltoall_on_queue(t, dst, src, 2, ret, q);
            RET_OK("long_alltoall");
            ishmem_getmem(got, dst, 2 * (size_t)npes * sizeof(long), me);
            bad = 0;
            for (int p = 0; p < npes; p++) bad += got[2 * p] != p * 100 + me || got[2 * p + 1] != -(p * 100 + me);
            CHECK(bad == 0, "long_alltoall_on_queue (team %d): %zu wrong", ti, bad);
            /* reductions and scans: long sum, double max, uint64 xor, int sum inscan/exscan */
            for (int i = 0; i < 8; i++) h[i] = me * 3 + i;
            PREP(h, 8 * sizeof(long));
            ishmemx_long_sum_reduce_on_queue(t, dst, src, 8, ret, q);
            RET_OK("long_sum_reduce");
            ishmem_getmem(got, dst, 8 * sizeof(long), me);
            bad = 0;
            for (int i = 0; i < 8; i++) bad += got[i] != 3L * npes * (npes - 1) / 2 + (long)npes * i;
            CHECK(bad == 0, "long_sum_reduce_on_queue (team %d): %zu wrong (got[1] %ld)", ti, bad, got[1]);
            double dh[4], dg[4];
            for (int i = 0; i < 4; i++) dh[i] = (me == npes - 1 ? 50.5 : me) + i;
            PREP(dh, sizeof dh);
            ishmemx_double_max_reduce_on_queue(t, (double *)dst, (double *)src, 4, ret, q);
            RET_OK("double_max_reduce");
            ishmem_getmem(dg, dst, sizeof dg, me);
            bad = 0;
            for (int i = 0; i < 4; i++) bad += dg[i] != 50.5 + i;
            CHECK(bad == 0, "double_max_reduce_on_queue (team %d): %zu wrong", ti, bad);
            uint64_t uh = 1ull << me, ug = 0;
            PREP(&uh, sizeof uh);
            ishmemx_uint64_xor_reduce_on_queue(t, (uint64_t *)dst, (uint64_t *)src, 1, ret, q);
            RET_OK("uint64_xor_reduce");
            ishmem_getmem(&ug, dst, sizeof ug, me);
            CHECK(ug == (1ull << npes) - 1, "uint64_xor_reduce_on_queue (team %d): %#llx", ti, (unsigned long long)ug);
            int ih = me + 1, ig = -1;
            PREP(&ih, sizeof ih);
            ishmemx_int_sum_inscan_on_queue(t, (int *)dst, (int *)src, 1, ret, q);
            RET_OK("int_sum_inscan");
            ishmem_getmem(&ig, dst, sizeof ig, me);
            CHECK(ig == (me + 1) * (me + 2) / 2, "int_sum_inscan_on_queue (team %d): %d", ti, ig);
            ishmem_barrier_all();
            ishmemx_int_sum_exscan_on_queue(t, (int *)dst, (int *)src, 1, ret, q);
            RET_OK("int_sum_exscan");
            ishmem_getmem(&ig, dst, sizeof ig, me);
            CHECK(ig == me * (me + 1) / 2, "int_sum_exscan_on_queue (team %d): %d", ti, ig);
            /* in place, then a host collective of the same team after the queue's */
            ishmem_putmem(src, h, 8 * sizeof(long), me);
            ishmem_barrier_all();
            ishmemx_long_sum_reduce_on_queue(t, src, src, 8, ret, q);
            RET_OK("long_sum_reduce in place");
            ishmem_getmem(got, src, 8 * sizeof(long), me);
            CHECK(got[2] == 3L * npes * (npes - 1) / 2 + 2L * npes, "in-place long_sum_reduce_on_queue (team %d): %ld", ti, got[2]);
            CHECK(ishmem_long_sum_reduce(t, dst, src, 1) == 0, "host reduce after the queue's (team %d)", ti);
            ishmem_getmem(got, dst, sizeof(long), me);
            CHECK(got[0] == npes * (3L * npes * (npes - 1) / 2), "host reduce after the queue's (team %d): %ld", ti, got[0]);
        }
#undef RET_OK
#undef PREP
        ishmem_team_destroy(dup);
        ishmem_barrier_all();
        ishmem_free(dst);
        ishmem_free(src);
        ishmem_free(ret);
    }

    ishmem_free(sig);
    ishmem_free(sym);
    ishmem_finalize();
    return gpu_test_end("mock_queue_remote");
}
