/* test_util.h: helpers shared by the C test programs.
 * CHECK(cond, fmt, ...) prints "FAIL: [PE n] file:line: <message>" and counts the failure;
 * test_finish() finalizes and returns the exit status (0 only when nothing failed). */
#ifndef ISHMEM_TEST_UTIL_H
#define ISHMEM_TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ishmem.h>
#include <ishmemx.h>

static int t_me = -1;
static int t_npes = 0;
static int t_failures = 0;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL: [PE %d] %s:%d: (%s) ", t_me, __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            fflush(stderr);                                                              \
            t_failures++;                                                                \
        }                                                                                \
    } while (0)

/* CHECK_EQ for integer values (compared and printed as long long / unsigned long long). */
#define CHECK_EQ(got, want)                                                              \
    CHECK((got) == (want), "got %lld (0x%llx), want %lld (0x%llx)", (long long)(got),    \
          (unsigned long long)(got), (long long)(want), (unsigned long long)(want))

static inline void test_init_ids(void) {
    t_me = ishmem_my_pe();
    t_npes = ishmem_n_pes();
}

/* Whether PE pe is on this PE's node (jobs across nodes, ISHMEM_NODE_SPLIT): ishmem_ptr maps
 * exactly the heaps of this node. */
static long t_node_probe;
static inline int t_same_node(int pe) {
    return ishmem_ptr(&t_node_probe, pe) != NULL;
}

static inline void test_init(void) {
    ishmem_init();
    test_init_ids();
}

/* Finalize and report. Returns the process exit status. */
static inline int test_finish(const char *name) {
    ishmem_finalize();
    if (t_failures) {
        fprintf(stderr, "FAIL: [PE %d] %s: %d check(s) failed\n", t_me, name, t_failures);
        return 1;
    }
    if (t_me == 0)
        printf("PASS: %s (%d PEs)\n", name, t_npes);
    return 0;
}

#endif
