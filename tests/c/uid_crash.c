/* uid_crash: a job started by a plain shell script through unique-id init, with no launcher,
 * where PE 1 dies; only the library's watchdog can end the others.
 *   uid_crash MODE RANK NRANKS FILE         rank 0 makes the unique id and writes it to FILE,
 *                                           the others read it from there. MODE: sigkill (PE 1
 *                                           raises SIGKILL after init), no_finalize (PE 1 exits
 *                                           with status 3 without ishmem_finalize), bad_pe (PE 1
 *                                           makes a bad call), global_exit (PE 1 calls
 *                                           ishmem_global_exit(5)); the others wait in a barrier.
 *                                           implicit: every PE returns 0 from main without
 *                                           ishmem_finalize (finalized at exit) */
#include "test_util.h"
#include <signal.h>
#include <unistd.h>

/* Rank 0 makes the id (its process serves the rendezvous, so it must be one of the PEs) and
 * writes it to `path`; the others wait for the file (20 s at most). */
static int share_uid(int rank, const char *path, ishmemx_uniqueid_t *uid) {
    if (rank == 0) {
        if (ishmemx_get_uniqueid(uid) != 0) {
            fprintf(stderr, "FAIL: ishmemx_get_uniqueid\n");
            return 1;
        }
        char tmpname[4096];
        snprintf(tmpname, sizeof tmpname, "%s.tmp", path);
        FILE *f = fopen(tmpname, "wb");
        if (!f || fwrite(uid, sizeof *uid, 1, f) != 1 || fclose(f) != 0 || rename(tmpname, path)) {
            fprintf(stderr, "FAIL: cannot write %s\n", path);
            return 1;
        }
        return 0;
    }
    for (int i = 0; i < 2000; i++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t got = fread(uid, sizeof *uid, 1, f);
            fclose(f);
            if (got == 1)
                return 0;
        }
        usleep(10000);
    }
    fprintf(stderr, "FAIL: rank %d: no unique id in %s after 20 s\n", rank, path);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "FAIL: usage: uid_crash MODE RANK NRANKS FILE\n");
        return 2;
    }
    const char *mode = argv[1];
    ishmemx_uniqueid_t uid;
    if (share_uid(atoi(argv[2]), argv[4], &uid))
        return 2;
    ishmemx_attr_t a = ISHMEMX_ATTR_INITIALIZER;
    a.use_uid = true;
    a.uid = &uid;
    a.rank = atoi(argv[2]);
    a.nranks = atoi(argv[3]);
    ishmemx_init_attr(&a);
    test_init_ids();
    if (t_me == 1) {
        if (!strcmp(mode, "sigkill")) {
            raise(SIGKILL);
            pause();
        }
        if (!strcmp(mode, "bad_pe")) {
            int v = 1;
            static int target;
            ishmem_int_put(&target, &v, 1, 7); /* a fatal error: pe 7 out of range */
            fprintf(stderr, "FAIL: [PE 1] ishmem_int_put to PE 7 returned\n");
            return 4;
        }
        if (!strcmp(mode, "global_exit")) {
            usleep(100000); /* the others are in the barrier by now, or soon */
            ishmem_global_exit(5);
            fprintf(stderr, "FAIL: [PE 1] ishmem_global_exit returned\n");
            return 4;
        }
        if (!strcmp(mode, "no_finalize"))
            exit(3); /* a failing exit without finalize: the others must end */
    }
    if (!strcmp(mode, "implicit")) {
        /* put to the next PE, a barrier, check, and return without ishmem_finalize */
        static int got;
        int v = 100 + t_me;
        ishmem_int_put(&got, &v, 1, (t_me + 1) % t_npes);
        ishmem_barrier_all();
        CHECK_EQ(got, 100 + (t_me + t_npes - 1) % t_npes);
        return t_failures ? 1 : 0;
    }
    ishmem_barrier_all();
    fprintf(stderr, "FAIL: [PE %d] the barrier returned although PE 1 is gone\n", t_me);
    return 3;
}
