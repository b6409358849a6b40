/* net_victim: the job that tests/scripts/net_attack.sh attacks from outside (issue 30, item 2).
 * Run across 2 nodes (ISHMEM_NODE_SPLIT=2, tcp;ofi_rxm on loopback) with one argument, a
 * directory: every PE holds a marker value in a symmetric global and in a heap word; PE 1 writes
 * its pid to <dir>/pid, then every PE waits for <dir>/done (the attacker has finished) and checks
 * that both markers are unchanged, on this PE and, through the network, on the other node's PE.
 * `net_victim got`: PE 0 reads the lazily bound part of PE 1's .got.plt through the network,
 * which must end the job with an error naming the loader's part (it is not registered). */
#include "test_util.h"

#include <unistd.h>

#define GLOBAL_MARK 0x5ec7e75ec7e70001ull
#define HEAP_MARK 0x5ec7e75ec7e70002ull

uint64_t victim_global = GLOBAL_MARK; /* .data */
extern char _GLOBAL_OFFSET_TABLE_[]; /* .got.plt (GNU ld, gold) */

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <dir>|got\n", argv[0]);
        return 2;
    }
    test_init();
    if (!strcmp(argv[1], "got")) {
        if (t_me == 0) {
            uint64_t v = 0;
            /* GOT[3], the first slot of a library function (after the 3 reserved words) */
            ishmem_getmem(&v, _GLOBAL_OFFSET_TABLE_ + 24, 8, 1);
            CHECK(0, "read GOT[3] of PE 1 through the network: %#llx", (unsigned long long)v);
        }
        ishmem_barrier_all();
        return test_finish("net_victim got");
    }
    uint64_t *heap_word = ishmem_malloc(64);
    CHECK(heap_word != NULL, "ishmem_malloc failed");
    if (!heap_word)
        return 1;
    heap_word[0] = HEAP_MARK;
    ishmem_barrier_all();
    char path[4096];
    if (t_me == 1) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s/pid.tmp", argv[1]);
        snprintf(path, sizeof path, "%s/pid", argv[1]);
        FILE *f = fopen(tmp, "w");
        CHECK(f != NULL, "cannot write %s", tmp);
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
            rename(tmp, path);
        }
    }
    /* Not in a barrier meanwhile: the attacker may write the heap's sync words. */
    snprintf(path, sizeof path, "%s/done", argv[1]);
    int waited = 0;
    while (access(path, F_OK) != 0 && waited < 60000) {
        usleep(10000);
        waited += 10;
    }
    CHECK(waited < 60000, "%s did not appear within 60 s", path);
    ishmem_barrier_all();
    printf("[PE %d] victim_global = %#llx, heap word = %#llx\n", t_me, (unsigned long long)victim_global,
           (unsigned long long)heap_word[0]);
    fflush(stdout);
    CHECK(victim_global == GLOBAL_MARK, "victim_global was changed to %#llx", (unsigned long long)victim_global);
    CHECK(heap_word[0] == HEAP_MARK, "the heap word was changed to %#llx", (unsigned long long)heap_word[0]);
    /* The job's own accesses across nodes still reach the global and the heap. */
    int other = (t_me + 1) % t_npes;
    CHECK_EQ(ishmem_uint64_g(&victim_global, other), GLOBAL_MARK);
    CHECK_EQ(ishmem_uint64_g(heap_word, other), HEAP_MARK);
    ishmem_barrier_all();
    uint64_t mine = GLOBAL_MARK + 16 + (uint64_t)t_me;
    ishmem_uint64_put(&victim_global, &mine, 1, other);
    ishmem_barrier_all();
    CHECK_EQ(victim_global, GLOBAL_MARK + 16 + (uint64_t)other);
    ishmem_free(heap_word);
    return test_finish("net_victim");
}
