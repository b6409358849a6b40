/* shmfull.c: symmetric memory beyond what the shared-memory directory can hold (issue 27,
 * item 5). `shmfull MIB [COUNT]`: every PE allocates COUNT (default 1) blocks of MIB MiB and
 * writes every byte of them, then checks a neighbour's first byte. Run by
 * tests/scripts/shm_full.sh with ISHMEM_SHM_DIR on a tmpfs too small for the blocks: the job
 * must end with the library's error naming the directory, never with SIGBUS. */
#include "test_util.h"

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 30;
    int count = argc > 2 ? atoi(argv[2]) : 1;
    test_init();
    char *last = NULL;
    for (int i = 0; i < count; i++) {
        char *p = ishmem_malloc(mib << 20);
        CHECK(p != NULL, "ishmem_malloc(%zu MiB) returned NULL", mib);
        if (!p)
            return test_finish("shmfull");
        memset(p, 'a' + t_me, mib << 20);
        last = p;
    }
    ishmem_barrier_all();
    char c = ishmem_char_g(last, (t_me + 1) % t_npes);
    CHECK_EQ(c, 'a' + (t_me + 1) % t_npes);
    return test_finish("shmfull");
}
