/* fabric_floor.c -- the provider's own floor for the across-node rows (issue 31): two
 * processes on loopback, each spinning on fi_cq_read (the cheapest possible progress), time
 *   read   one 8-byte fi_read round trip                      (floor of g / getmem 8 B)
 *   fadd   one 8-byte fi_fetch_atomic(FI_SUM) round trip      (floor of fetch_add)
 *   cswap  one 8-byte fi_compare_atomic round trip            (floor of compare_swap)
 *   write  an 8-byte fi_inject_write ping-pong, half of it    (floor of one flag write: barrier)
 *   exchange both ranks write an 8-byte flag, then wait for the other's (a 2-PE barrier)
 *   writeq an 8-byte fi_write + wait for its completion       (floor of p + quiet)
 *   msg    an 8-byte fi_inject/fi_recv ping-pong, half of it  (one message one way)
 * Usage: fabric_floor PROVIDER [ITERS]   e.g. FI_TCP_IFACE=lo fabric_floor 'tcp;ofi_rxm'
 *   FLOOR_WAIT_FD=1        the CQ gets a wait fd (as ishmem's ISHMEM_OFI_PROGRESS_WAKE=arrival)
 *   FLOOR_WRITE_COUNTER=1  a completion counter is bound for writes (FI_WRITE), as ishmem did
 *                          before issue 31's fifteenth round: on tcp;ofi_rxm every injected
 *                          write then goes rxm's buffered way, signalled through a wait fd
 *   FLOOR_MANUAL=1         manual data progress asked (as ishmem asks it)
 *   FLOOR_INJECT=n         ask the provider for an inject size of n bytes (hints)
 *   FLOOR_BYTES=n          the write row's injected writes carry n bytes (8-4096, default 8)
 *   FLOOR_ROW=<row>        only that row (to count its system calls: strace -f -c); on 1.17's
 *                          tcp;ofi_rxm every operation that needs a completion from tcp (read,
 *                          writeq, a received msg) costs a write and a read call (its CQ's
 *                          wait signal), the injected write and exchange none
 * Prints "row,us" lines: the median of 7 batches of ITERS (default 5000) operations.
 * Only loopback: the endpoints are opened for node 127.0.0.1. */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x)                                                                                 \
    do {                                                                                         \
        long r_ = (long)(x);                                                                     \
        if (r_) {                                                                                \
            fprintf(stderr, "fabric_floor: %s = %ld (%s)\n", #x, r_, fi_strerror((int)-r_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

struct peer {
    uint64_t addr, key;
    char name[64];
    size_t namelen;
};

static struct fid_ep *ep;
static struct fid_cq *cq;
static fi_addr_t other;
static volatile uint64_t *mem; /* [0] flag, [1] target word, [2..] local operands */
static void *desc;
static struct peer them;
static int atomics;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Reads the CQ until `want` completions were seen; returns them. */
static void drain(int want) {
    struct fi_cq_entry e[8];
    while (want > 0) {
        ssize_t n = fi_cq_read(cq, e, 8);
        if (n > 0) {
            want -= (int)n;
        } else if (n != -FI_EAGAIN) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(cq, &err, 0);
            fprintf(stderr, "fabric_floor: pid %d cq error %d (%s) prov_errno %d\n", (int)getpid(), err.err, fi_strerror(err.err), err.prov_errno);
            exit(1);
        }
    }
}

static void progress(void) {
    struct fi_cq_entry e[8];
    ssize_t n = fi_cq_read(cq, e, 8);
    (void)n;
}

static void post_retry(ssize_t (*f)(void *), void *a) {
    ssize_t r;
    while ((r = f(a)) == -FI_EAGAIN) progress();
    CHECK(r);
}

static ssize_t do_read(void *a) { (void)a; return fi_read(ep, (void *)&mem[2], 8, desc, other, them.addr + 8, them.key, NULL); }
static ssize_t do_fadd(void *a) {
    (void)a;
    return fi_fetch_atomic(ep, (void *)&mem[3], 1, desc, (void *)&mem[2], desc, other, them.addr + 8, them.key, FI_UINT64, FI_SUM, NULL);
}
static ssize_t do_cswap(void *a) {
    (void)a;
    return fi_compare_atomic(ep, (void *)&mem[3], 1, desc, (void *)&mem[4], desc, (void *)&mem[2], desc, other, them.addr + 8,
                             them.key, FI_UINT64, FI_CSWAP, NULL);
}
static uint64_t wval;
static size_t wbytes = 8; /* FLOOR_BYTES: size of the write row's injected writes */
static uint64_t wbuf[512]; /* their source: the value in the first word, zeros after */
static ssize_t do_winject(void *a) {
    (void)a;
    wbuf[0] = wval;
    return fi_inject_write(ep, wbuf, wbytes, other, them.addr, them.key);
}
static ssize_t do_write(void *a) { (void)a; mem[5] = wval; return fi_write(ep, (void *)&mem[5], 8, desc, other, them.addr + 8, them.key, NULL); }
static ssize_t do_send(void *a) { (void)a; return fi_inject(ep, &wval, 8, other); }
static ssize_t do_recv(void *a) { (void)a; return fi_recv(ep, (void *)&mem[6], 8, desc, other, NULL); }

/* Rank 0 times; rank 1 serves. Both spin on fi_cq_read. */
static double run(int me, const char *row, int iters) {
    double t0 = 0;
    if (!strcmp(row, "write")) {
        /* ping-pong of flag writes: rank 0 writes i, rank 1 answers i when it sees it */
        mem[0] = 0;
        t0 = now_us();
        for (int i = 1; i <= iters; i++) {
            if (me == 0) {
                wval = (uint64_t)i;
                post_retry(do_winject, NULL);
            }
            while (mem[0] != (uint64_t)i) progress();
            if (me == 1) {
                wval = (uint64_t)i;
                post_retry(do_winject, NULL);
            }
        }
        return (now_us() - t0) / iters / 2;
    }
    if (!strcmp(row, "exchange")) {
        /* both ranks write i to the other and wait for the other's i (a 2-PE barrier) */
        mem[0] = 0;
        t0 = now_us();
        for (int i = 1; i <= iters; i++) {
            wval = (uint64_t)i;
            post_retry(do_winject, NULL);
            while (mem[0] < (uint64_t)i) progress();
        }
        return (now_us() - t0) / iters;
    }
    if (!strcmp(row, "msg")) {
        t0 = now_us();
        for (int i = 1; i <= iters; i++) {
            post_retry(do_recv, NULL);
            if (me == 0) post_retry(do_send, NULL);
                    drain(1); /* the receive (injects report no completion) */
            if (me == 1) post_retry(do_send, NULL);
        }
        return (now_us() - t0) / iters / 2;
    }
    /* one-sided rows: rank 1 spins on the CQ until rank 0's stop flag lands */
    if (me == 1) {
        mem[0] = 0;
        while (mem[0] == 0) progress();
        return 0;
    }
    ssize_t (*f)(void *) = !strcmp(row, "read") ? do_read : !strcmp(row, "fadd") ? do_fadd : !strcmp(row, "cswap") ? do_cswap : do_write;
    t0 = now_us();
    for (int i = 0; i < iters; i++) {
        wval = (uint64_t)i;
        post_retry(f, NULL);
        drain(1);
    }
    double us = (now_us() - t0) / iters;
    wval = 1;
    post_retry(do_winject, NULL);
    return us;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fabric_floor PROVIDER [ITERS]\n");
        return 2;
    }
    int iters = argc > 2 ? atoi(argv[2]) : 5000;
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    pid_t child = fork();
    int me = child == 0 ? 1 : 0;
    alarm(120); /* neither rank outlives a lost peer */
    int sock = sv[me];

    struct fi_info *hints = fi_allocinfo(), *info;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
    /* FLOOR_MANUAL=1: manual data progress asked, as ishmem asks it */
    if (getenv("FLOOR_MANUAL") && *getenv("FLOOR_MANUAL") == '1') hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL;
    hints->fabric_attr->prov_name = strdup(argv[1]);
    /* FLOOR_INJECT=n: ask an inject size of n bytes (tcp;ofi_rxm passes up to 128 to tcp) */
    if (getenv("FLOOR_INJECT")) hints->tx_attr->inject_size = (size_t)atoi(getenv("FLOOR_INJECT"));
    if (getenv("FLOOR_BYTES")) wbytes = (size_t)atoi(getenv("FLOOR_BYTES"));
    if (wbytes < 8 || wbytes > 4096) {
        fprintf(stderr, "fabric_floor: FLOOR_BYTES must be 8-4096\n");
        return 2;
    }
    CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info));
    if (wbytes > info->tx_attr->inject_size) {
        fprintf(stderr, "fabric_floor: FLOOR_BYTES %zu over the inject size %zu\n", wbytes, info->tx_attr->inject_size);
        return 2;
    }
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_av *av;
    CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
    CHECK(fi_domain(fab, info, &dom, NULL));
    struct fi_atomic_attr aa;
    atomics = fi_query_atomic(dom, FI_UINT64, FI_SUM, &aa, FI_FETCH_ATOMIC) == 0;
    /* FLOOR_WAIT_FD=1: a CQ with a wait fd, as ishmem opens for its progress thread with
       ISHMEM_OFI_PROGRESS_WAKE=arrival (costs every operation the provider signal of it) */
    const char *wfd = getenv("FLOOR_WAIT_FD");
    struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = wfd && *wfd == '1' ? FI_WAIT_FD : FI_WAIT_NONE};
    CHECK(fi_cq_open(dom, &ca, &cq, NULL));
    struct fi_av_attr aattr = {.type = FI_AV_TABLE};
    CHECK(fi_av_open(dom, &aattr, &av, NULL));
    CHECK(fi_endpoint(dom, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    const char *wc = getenv("FLOOR_WRITE_COUNTER");
    if (wc && *wc == '1') {
        struct fid_cntr *cntr;
        struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE};
        CHECK(fi_cntr_open(dom, &cattr, &cntr, NULL));
        CHECK(fi_ep_bind(ep, &cntr->fid, FI_WRITE));
    }
    CHECK(fi_enable(ep));
    mem = aligned_alloc(4096, 4096);
    memset((void *)mem, 0, 4096);
    struct fid_mr *mr;
    CHECK(fi_mr_reg(dom, (void *)mem, 4096, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV, 0, 0, 0, &mr,
                    NULL));
    if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
        CHECK(fi_mr_bind(mr, &ep->fid, 0));
        CHECK(fi_mr_enable(mr));
    }
    desc = fi_mr_desc(mr);
    /* without FI_MR_VIRT_ADDR a remote address is an offset into the region */
    struct peer mine = {.addr = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)mem : 0, .key = fi_mr_key(mr)};
    mine.namelen = sizeof mine.name;
    CHECK(fi_getname(&ep->fid, mine.name, &mine.namelen));
    if (write(sock, &mine, sizeof mine) != sizeof mine || read(sock, &them, sizeof them) != sizeof them) return 1;
    if (fi_av_insert(av, them.name, 1, &other, 0, NULL) != 1) return 1;
    /* operations whose completion we wait for ask for one; injects do not */
    const char *rows[] = {"read", "fadd", "cswap", "write", "exchange", "writeq", "msg"};
    char ok = 1;
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        if (!atomics && (!strcmp(rows[r], "fadd") || !strcmp(rows[r], "cswap"))) continue;
        /* FLOOR_ROW=name: that row alone (e.g. to count its system calls under strace) */
        if (getenv("FLOOR_ROW") && strcmp(getenv("FLOOR_ROW"), rows[r])) continue;
        double v[7];
        for (int b = 0; b < 8; b++) {
            /* a handshake between batches so both ranks start together */
            if (write(sock, &ok, 1) != 1 || read(sock, &ok, 1) != 1) return 1;
            double x = run(me, rows[r], b == 0 ? iters / 10 + 1 : iters);
            if (b > 0) v[b - 1] = x;
        }
        if (me == 0) {
            for (int i = 0; i < 7; i++)
                for (int j = i + 1; j < 7; j++)
                    if (v[j] < v[i]) { double t = v[i]; v[i] = v[j]; v[j] = t; }
            printf("%s,%s,%.2f,%.2f,%.2f\n", argv[1], rows[r], v[3], v[0], v[6]);
            fflush(stdout);
        }
    }
    if (write(sock, &ok, 1) != 1 || read(sock, &ok, 1) != 1) return 1;
    fi_close(&ep->fid);
    if (me == 0) waitpid(child, NULL, 0);
    return 0;
}
