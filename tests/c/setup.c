/* setup: init, my_pe, n_pes, version, name, query_thread, query_initialized,
 * runtime_get_type, ishmem_ptr.
 * usage: setup RUNTIME NPES [init|thread0|thread1|thread2|thread3]
 *   RUNTIME: the expected ishmemx_runtime_get_type() (ISHMRUN, PMIX, PMI, SINGLETON);
 *   NPES: the expected number of PEs. */
#include "test_util.h"

static int ranks_seen[64];
static long global_word = 5;
static int static_zero;

static int runtime_from_name(const char *s) {
    if (!strcmp(s, "ISHMRUN")) return ISHMEMX_RUNTIME_ISHMRUN;
    if (!strcmp(s, "PMIX")) return ISHMEMX_RUNTIME_PMIX;
    if (!strcmp(s, "PMI")) return ISHMEMX_RUNTIME_PMI;
    if (!strcmp(s, "SINGLETON")) return ISHMEMX_RUNTIME_SINGLETON;
    if (!strcmp(s, "UNIQUEID")) return ISHMEMX_RUNTIME_UNIQUEID;
    fprintf(stderr, "FAIL: unknown runtime name %s\n", s);
    exit(2);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "FAIL: usage: setup RUNTIME NPES [init|threadN]\n");
        return 2;
    }
    int want_rt = runtime_from_name(argv[1]);
    int want_npes = atoi(argv[2]);
    const char *mode = argc > 3 ? argv[3] : "init";

    /* Before init. */
    int inited = 42;
    ishmemx_query_initialized(&inited);
    CHECK_EQ(inited, 0);
    CHECK_EQ(ishmemx_runtime_get_type(), ISHMEMX_RUNTIME_INVALID);
    int major = -1, minor = -1;
    ishmem_info_get_version(&major, &minor);
    CHECK_EQ(major, 1);
    CHECK_EQ(minor, 5);

    int want_level = ISHMEM_THREAD_MULTIPLE;
    if (!strcmp(mode, "init")) {
        ishmem_init();
    } else if (!strncmp(mode, "thread", 6)) {
        want_level = atoi(mode + 6);
        int provided = -1;
        int rc = ishmem_init_thread(want_level, &provided);
        CHECK_EQ(rc, 0);
        CHECK_EQ(provided, want_level);
    } else {
        fprintf(stderr, "FAIL: unknown mode %s\n", mode);
        return 2;
    }
    test_init_ids();

    ishmemx_query_initialized(&inited);
    CHECK_EQ(inited, 1);
    CHECK_EQ(t_npes, want_npes);
    CHECK(t_me >= 0 && t_me < t_npes, "my_pe %d npes %d", t_me, t_npes);
    CHECK(t_npes <= 64, "too many PEs for this test: %d", t_npes);
    CHECK_EQ(ishmemx_runtime_get_type(), want_rt);
    int level = -1;
    ishmem_query_thread(&level);
    CHECK_EQ(level, want_level);

    major = minor = -1;
    ishmem_info_get_version(&major, &minor);
    CHECK_EQ(major, ISHMEM_MAJOR_VERSION);
    CHECK_EQ(minor, ISHMEM_MINOR_VERSION);
    CHECK_EQ(ISHMEM_MAJOR_VERSION, 1);
    CHECK_EQ(ISHMEM_MINOR_VERSION, 5);
    char name[ISHMEM_MAX_NAME_LEN + 8];
    memset(name, 'x', sizeof name);
    ishmem_info_get_name(name);
    CHECK(strcmp(name, ISHMEM_VENDOR_STRING) == 0, "name \"%.*s\"", ISHMEM_MAX_NAME_LEN, name);
    CHECK(strlen(ISHMEM_VENDOR_STRING) < ISHMEM_MAX_NAME_LEN, "vendor string too long");
    CHECK(name[ISHMEM_MAX_NAME_LEN] == 'x', "ishmem_info_get_name wrote past ISHMEM_MAX_NAME_LEN");

    /* Every PE number appears exactly once: each PE marks its slot on every PE. */
    for (int pe = 0; pe < t_npes; pe++)
        ishmem_int_p(&ranks_seen[t_me], t_me + 1, pe);
    ishmem_barrier_all();
    for (int pe = 0; pe < t_npes; pe++)
        CHECK(ranks_seen[pe] == pe + 1, "slot %d holds %d", pe, ranks_seen[pe]);

    /* ishmem_ptr: heap, globals, statics; NULL for private memory. */
    int *buf = ishmem_calloc((size_t)t_npes, sizeof(int));
    CHECK(buf != NULL, "calloc");
    CHECK(ishmem_ptr(buf, t_me) == (void *)buf, "ishmem_ptr(buf, me) = %p, buf = %p",
          ishmem_ptr(buf, t_me), (void *)buf);
    CHECK(ishmem_ptr(&global_word, t_me) == (void *)&global_word, "ishmem_ptr(global, me)");
    for (int pe = 0; pe < t_npes; pe++) {
        int *peer = ishmem_ptr(&buf[t_me], pe);
        /* PEs of other nodes (ISHMEM_NODE_SPLIT, pretend nodes) are not mapped: NULL. */
        int near = ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, pe, ISHMEM_TEAM_SHARED) >= 0;
        if (!near) {
            CHECK(peer == NULL, "ishmem_ptr(heap, %d) on another node is not NULL", pe);
            CHECK(ishmem_ptr(&global_word, pe) == NULL, "ishmem_ptr(global, %d) on another node", pe);
            ishmem_int_p(&buf[t_me], 1000 * t_me + pe, pe); /* through the network instead */
            continue;
        }
        CHECK(peer != NULL, "ishmem_ptr(heap, %d) is NULL", pe);
        if (peer)
            *peer = 1000 * t_me + pe; /* a direct store into the peer's heap */
        CHECK(ishmem_ptr(&global_word, pe) != NULL, "ishmem_ptr(global, %d) is NULL", pe);
        CHECK(ishmem_ptr(&static_zero, pe) != NULL, "ishmem_ptr(static, %d) is NULL", pe);
    }
    int local = 0;
    CHECK(ishmem_ptr(&local, t_me) == NULL, "ishmem_ptr(stack) not NULL");
    int *priv = malloc(sizeof(int));
    CHECK(ishmem_ptr(priv, (t_me + 1) % t_npes) == NULL, "ishmem_ptr(libc heap) not NULL");
    free(priv);
    ishmem_barrier_all();
    for (int pe = 0; pe < t_npes; pe++)
        CHECK(buf[pe] == 1000 * pe + t_me, "buf[%d] = %d", pe, buf[pe]);

    /* A direct load through ishmem_ptr sees the peer's global. */
    global_word = 100 + t_me;
    ishmem_barrier_all();
    int next = (t_me + 1) % t_npes;
    long *gp = ishmem_ptr(&global_word, next);
    if (ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, next, ISHMEM_TEAM_SHARED) >= 0)
        CHECK(gp && *gp == 100 + next, "peer global through ishmem_ptr: %ld", gp ? *gp : -1L);
    else
        CHECK(gp == NULL, "ishmem_ptr to a global of another node");
    ishmem_barrier_all();

    ishmem_free(buf);
    int rc = test_finish("setup");
    ishmemx_query_initialized(&inited);
    if (inited != 0) {
        fprintf(stderr, "FAIL: [PE %d] query_initialized after finalize = %d\n", t_me, inited);
        rc = 1;
    }
    return rc;
}
