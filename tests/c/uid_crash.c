/* uid_crash: a job started by a plain shell script through unique-id init, with no launcher,
 * where PE 1 dies; only the library's watchdog can end the others.
 *   uid_crash mkuid FILE                    write a unique id (128 bytes) to FILE
 *   uid_crash MODE RANK NRANKS FILE         MODE: sigkill (PE 1 raises SIGKILL after init),
 *                                           no_finalize (PE 1 exits with status 3 without
 *                                           ishmem_finalize), bad_pe (PE 1 makes a bad call),
 *                                           global_exit (PE 1 calls ishmem_global_exit(5));
 *                                           the others wait in a barrier.
 *                                           implicit: every PE returns 0 from main without
 *                                           ishmem_finalize (finalized at exit) */
#include "test_util.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "mkuid")) {
        ishmemx_uniqueid_t uid;
        if (ishmemx_get_uniqueid(&uid) != 0) {
            fprintf(stderr, "FAIL: ishmemx_get_uniqueid\n");
            return 1;
        }
        char tmpname[4096];
        snprintf(tmpname, sizeof tmpname, "%s.tmp", argv[2]);
        FILE *f = fopen(tmpname, "wb");
        if (!f || fwrite(&uid, sizeof uid, 1, f) != 1 || fclose(f) != 0 || rename(tmpname, argv[2])) {
            fprintf(stderr, "FAIL: cannot write %s\n", argv[2]);
            return 1;
        }
        return 0;
    }
    if (argc != 5) {
        fprintf(stderr, "FAIL: usage: uid_crash mkuid FILE | uid_crash MODE RANK NRANKS FILE\n");
        return 2;
    }
    const char *mode = argv[1];
    ishmemx_uniqueid_t uid;
    FILE *f = fopen(argv[4], "rb");
    if (!f || fread(&uid, sizeof uid, 1, f) != 1) {
        fprintf(stderr, "FAIL: cannot read %s\n", argv[4]);
        return 2;
    }
    fclose(f);
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
