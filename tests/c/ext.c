/* ext: the debugging extensions, host forms: ishmemx_print (all three forms and every message
 * type; the output captured from the file descriptor and compared exactly), ishmemx_timestamp
 * and ishmemx_timestamp_nbi (into host memory, before and after init, and into the symmetric
 * heap), ishmemx_nop and ishmemx_nop_no_r.
 *   ext            the checks above (ISHMEM_DEBUG must be unset: DEBUG messages print nothing)
 *   ext debug      with ISHMEM_DEBUG=1: DEBUG messages print
 *   ext error      PE 1 prints an ERROR message: the job ends (status 1)
 *   ext bad_type   PE 1 passes message type 9: a PE-tagged error naming ishmemx_print
 *   ext null_out   PE 1 passes NULL: a PE-tagged error naming ishmemx_print */
#include "test_util.h"
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Runs f with stdout and stderr redirected into temporary files; *out and *err get what was
 * written to each (static buffers). */
static char out_buf[4096], err_buf[4096];
static void capture2(void (*f)(void)) {
    fflush(stdout);
    fflush(stderr);
    FILE *tmp[2] = {tmpfile(), tmpfile()};
    char *buf[2] = {out_buf, err_buf};
    int saved[2];
    for (int i = 0; i < 2; i++) {
        saved[i] = dup(i + 1);
        dup2(fileno(tmp[i]), i + 1);
    }
    f();
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++) {
        dup2(saved[i], i + 1);
        close(saved[i]);
        rewind(tmp[i]);
        size_t n = fread(buf[i], 1, sizeof out_buf - 1, tmp[i]);
        buf[i][n] = 0;
        fclose(tmp[i]);
    }
}
/* What f wrote to descriptor fd (1 or 2); fails the test if it wrote to the other one. */
static const char *capture(int fd, void (*f)(void)) {
    capture2(f);
    const char *other = fd == 1 ? err_buf : out_buf;
    CHECK(other[0] == 0, "output on descriptor %d too: '%s'", 3 - fd, other);
    return fd == 1 ? out_buf : err_buf;
}

static char want[1024];
static int line_of_full;

static void p_debug_short(void) { ishmemx_print("quiet unless debugging"); }
static void p_warning(void) { ishmemx_print("low on fuel\n", ISHMEMX_PRINT_WARNING); }
static void p_warning_short_name(void) { ishmemx_print("short names", WARNING); }
static void p_full(void) {
    line_of_full = __LINE__ + 1;
    ishmemx_print(__FILE__, __LINE__, __func__, "with a location", ISHMEMX_PRINT_WARNING);
}
static void p_debug_full(void) { ishmemx_print("ext.c", 7L, "fn", "debugging", DEBUG); }
static void p_stdout(void) { ishmemx_print("raw to stdout", ISHMEMX_PRINT_STDOUT); }
static void p_stderr(void) { ishmemx_print("raw to stderr\n", STDERR); }
static void p_nothing(void) { }

static void check_print(int debug) {
    const char *got = capture(2, p_debug_short);
    if (debug)
        snprintf(want, sizeof want, "[PE %d] DEBUG: quiet unless debugging\n", t_me);
    else
        want[0] = 0;
    CHECK(strcmp(got, want) == 0, "debug short form: got '%s', want '%s'", got, want);

    got = capture(2, p_warning);
    snprintf(want, sizeof want, "[PE %d] WARNING: low on fuel\n", t_me);
    CHECK(strcmp(got, want) == 0, "warning: got '%s', want '%s'", got, want);

    got = capture(2, p_warning_short_name);
    snprintf(want, sizeof want, "[PE %d] WARNING: short names\n", t_me);
    CHECK(strcmp(got, want) == 0, "short enum names: got '%s', want '%s'", got, want);

    got = capture(2, p_full);
    snprintf(want, sizeof want, "[PE %d] WARNING: %s:%d: p_full: with a location\n", t_me, __FILE__, line_of_full);
    CHECK(strcmp(got, want) == 0, "full form: got '%s', want '%s'", got, want);

    got = capture(2, p_debug_full);
    if (debug)
        snprintf(want, sizeof want, "[PE %d] DEBUG: ext.c:7: fn: debugging\n", t_me);
    else
        want[0] = 0;
    CHECK(strcmp(got, want) == 0, "debug full form: got '%s', want '%s'", got, want);

    got = capture(1, p_stdout);
    CHECK(strcmp(got, "raw to stdout") == 0, "stdout: got '%s'", got);

    got = capture(2, p_stderr);
    CHECK(strcmp(got, "raw to stderr\n") == 0, "stderr: got '%s'", got);

    got = capture(2, p_nothing);
    CHECK(strcmp(got, "") == 0, "capture itself: got '%s'", got);
}

static void check_timestamps(int heap) {
    unsigned long host_cell[2] = {0, 0};
    unsigned long *cell = host_cell;
    if (heap) {
        cell = ishmem_calloc(2, sizeof(unsigned long));
        CHECK(cell != NULL, "ishmem_calloc");
    }
    for (int i = 0; i < 100; i++) {
        unsigned long long before = now_ns();
        ishmemx_timestamp(ishmemx_ts_handle(&cell[0]));
        unsigned long long mid = now_ns();
        ishmemx_timestamp_nbi(ishmemx_ts_handle(&cell[1]));
        if (t_me >= 0)
            ishmem_quiet();
        unsigned long long after = now_ns();
        CHECK(before <= cell[0] && cell[0] <= mid, "timestamp %lu not in [%llu, %llu]", cell[0], before, mid);
        CHECK(mid <= cell[1] && cell[1] <= after, "timestamp_nbi %lu not in [%llu, %llu]", cell[1], mid, after);
    }
    if (heap) {
        /* the cells are symmetric: a peer reads them back */
        ishmem_barrier_all();
        int peer = (t_me + 1) % t_npes;
        unsigned long theirs = ishmem_ulong_g(&cell[0], peer);
        CHECK(theirs > 0, "PE %d's heap stamp read remotely: %lu", peer, theirs);
        ishmem_barrier_all();
        ishmem_free(cell);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int debug = strcmp(mode, "debug") == 0;

    /* before init: the timestamp into host memory and the nops work */
    check_timestamps(0);
    ishmemx_nop();
    ishmemx_nop_no_r();

    test_init();
    if (strcmp(mode, "error") == 0) {
        ishmem_barrier_all();
        if (t_me == 1)
            ishmemx_print(__FILE__, 42L, "main", "the reactor is on fire", ISHMEMX_PRINT_ERROR);
        ishmem_barrier_all(); /* PE 0 waits here until the error ends the job */
        fprintf(stderr, "FAIL: [PE %d] still running after an ERROR message\n", t_me);
        return 1;
    }
    if (strcmp(mode, "bad_type") == 0 || strcmp(mode, "null_out") == 0) {
        ishmem_barrier_all();
        if (t_me == 1) {
            if (mode[0] == 'b')
                ishmemx_print("x", (ishmemx_print_msg_type_t)9);
            else
                ishmemx_print((const char *)NULL, ISHMEMX_PRINT_WARNING);
        }
        ishmem_barrier_all();
        fprintf(stderr, "FAIL: [PE %d] still running after a bad ishmemx_print\n", t_me);
        return 1;
    }
    check_print(debug);
    check_timestamps(0);
    check_timestamps(1);
    for (int i = 0; i < 1000; i++) {
        ishmemx_nop();
        ishmemx_nop_no_r();
    }
    ishmem_barrier_all();
    return test_finish(debug ? "ext debug" : "ext");
}
