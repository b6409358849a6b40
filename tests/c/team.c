/* team: the team routines. Predefined teams, ISHMEM_TEAM_INVALID queries, split_strided (even
 * PEs, a split of a split, a descending stride), split_2d (every PE's row and column, the
 * short last row), translate_pe (-1 for non-members), get_config round trips, destroy and the
 * reuse of the freed handle, team_sync on every team, and a split of an invalid parent. */
#include "test_util.h"

/* world PEs of team t in team order, checked with translate_pe both ways */
static void check_members(ishmem_team_t t, const char *name, int start, int stride, int size) {
    CHECK_EQ(ishmem_team_n_pes(t), size);
    for (int i = 0; i < size; i++) {
        int w = start + stride * i;
        CHECK(ishmem_team_translate_pe(t, i, ISHMEM_TEAM_WORLD) == w, "%s: team PE %d -> world %d, got %d",
              name, i, w, ishmem_team_translate_pe(t, i, ISHMEM_TEAM_WORLD));
        CHECK(ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, w, t) == i, "%s: world %d -> team PE %d", name, w, i);
        if (w == t_me)
            CHECK(ishmem_team_my_pe(t) == i, "%s: my_pe %d, want %d", name, ishmem_team_my_pe(t), i);
    }
    CHECK_EQ(ishmem_team_translate_pe(t, size, ISHMEM_TEAM_WORLD), -1);
    CHECK_EQ(ishmem_team_translate_pe(t, -1, ISHMEM_TEAM_WORLD), -1);
    /* a world PE outside the team translates to -1 */
    for (int w = 0; w < t_npes; w++) {
        int d = w - start, in = stride ? (d % stride == 0 && d / stride >= 0 && d / stride < size) : 0;
        if (!in)
            CHECK(ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, w, t) == -1, "%s: non-member %d", name, w);
    }
    CHECK_EQ(ishmem_team_sync(t), 0);
}

int main(void) {
    test_init();
    int n = t_npes, me = t_me;

    /* predefined teams: shared and node are the PEs of this node (all of them on one node;
     * consecutive ranks per node in the tests across nodes) */
    ishmem_team_t pre[3] = {ISHMEM_TEAM_WORLD, ISHMEM_TEAM_SHARED, ISHMEMX_TEAM_NODE};
    CHECK(ISHMEM_TEAM_WORLD == 0 && ISHMEM_TEAM_SHARED == 1 && ISHMEMX_TEAM_NODE == 2 && ISHMEM_TEAM_INVALID == -1,
          "team constants");
    int first = me, last = me;
    while (first > 0 && t_same_node(first - 1))
        first--;
    while (last < n - 1 && t_same_node(last + 1))
        last++;
    for (int pe = 0; pe < n; pe++)
        CHECK_EQ(t_same_node(pe), pe >= first && pe <= last);
    for (int k = 0; k < 3; k++) {
        int kn = k == 0 ? n : last - first + 1, kme = k == 0 ? me : me - first, k0 = k == 0 ? 0 : first;
        CHECK_EQ(ishmem_team_my_pe(pre[k]), kme);
        CHECK_EQ(ishmem_team_n_pes(pre[k]), kn);
        CHECK_EQ(ishmem_team_translate_pe(pre[k], kn - 1, ISHMEM_TEAM_WORLD), k0 + kn - 1);
        CHECK_EQ(ishmem_team_sync(pre[k]), 0);
        ishmem_team_config_t c = {99};
        CHECK_EQ(ishmem_team_get_config(pre[k], ISHMEM_TEAM_NUM_CONTEXTS, &c), 0);
        CHECK_EQ(c.num_contexts, 0);
    }
    CHECK_EQ(ishmem_team_my_pe(ISHMEM_TEAM_INVALID), -1);
    CHECK_EQ(ishmem_team_n_pes(ISHMEM_TEAM_INVALID), -1);
    CHECK_EQ(ishmem_team_translate_pe(ISHMEM_TEAM_INVALID, 0, ISHMEM_TEAM_WORLD), -1);
    CHECK_EQ(ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, 0, ISHMEM_TEAM_INVALID), -1);
    ishmem_team_config_t cfg = {7};
    CHECK(ishmem_team_get_config(ISHMEM_TEAM_INVALID, ISHMEM_TEAM_NUM_CONTEXTS, &cfg) != 0, "get_config(INVALID)");
    ishmem_team_destroy(ISHMEM_TEAM_INVALID); /* no effect */

    /* even PEs, with a configuration */
    int neven = (n + 1) / 2;
    ishmem_team_config_t ec = {5};
    ishmem_team_t even = 12345;
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 2, neven, &ec, ISHMEM_TEAM_NUM_CONTEXTS, &even), 0);
    if (me % 2 == 0) {
        CHECK(even >= 3, "even team handle %d", even);
        check_members(even, "even", 0, 2, neven);
        ishmem_team_config_t got = {0};
        CHECK_EQ(ishmem_team_get_config(even, ISHMEM_TEAM_NUM_CONTEXTS, &got), 0);
        CHECK_EQ(got.num_contexts, 5);
        got.num_contexts = 42;
        CHECK_EQ(ishmem_team_get_config(even, 0, &got), 0); /* an empty mask returns nothing */
        CHECK_EQ(got.num_contexts, 42);
        /* even's PE 0 is world PE 0: index 0 of the shared team where PE 0 is on this node */
        CHECK_EQ(ishmem_team_translate_pe(even, 0, ISHMEM_TEAM_SHARED), first == 0 ? 0 : -1);
    } else {
        CHECK_EQ(even, ISHMEM_TEAM_INVALID);
        CHECK_EQ(ishmem_team_my_pe(even), -1);
    }
    /* odd PEs (none with 1 PE) */
    ishmem_team_t odd = ISHMEM_TEAM_INVALID;
    if (n >= 2) {
        CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd), 0);
        if (me % 2)
            check_members(odd, "odd", 1, 2, n / 2);
        else
            CHECK_EQ(odd, ISHMEM_TEAM_INVALID);
        /* even and odd are disjoint: they may share a handle */
        if (me % 2 == 0)
            CHECK(ishmem_team_translate_pe(even, 0, ISHMEM_TEAM_WORLD) == 0, "even team after odd split");
    }

    /* a split of the even team: its PEs 1.. (world 2, 4, ...) */
    if (me % 2 == 0 && neven >= 2) {
        ishmem_team_t sub = ISHMEM_TEAM_INVALID;
        CHECK_EQ(ishmem_team_split_strided(even, 1, 1, neven - 1, NULL, 0, &sub), 0);
        if (me == 0) {
            CHECK_EQ(sub, ISHMEM_TEAM_INVALID);
        } else {
            check_members(sub, "even[1:]", 2, 2, neven - 1);
            CHECK_EQ(ishmem_team_translate_pe(sub, 0, even), 1);
            CHECK_EQ(ishmem_team_translate_pe(even, 0, sub), -1);
            ishmem_team_destroy(sub);
        }
        CHECK_EQ(ishmem_team_sync(even), 0);
    }

    /* descending stride: world PEs n-1, n-2, ..., 0 */
    ishmem_team_t rev = ISHMEM_TEAM_INVALID;
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev), 0);
    check_members(rev, "reversed", n - 1, -1, n);
    CHECK_EQ(ishmem_team_my_pe(rev), n - 1 - me);

    /* 2D: xrange 2 (rows of 2, a short last row with an odd count) and xrange 3 */
    for (int xr = 2; xr <= 3; xr++) {
        ishmem_team_t xt = 777, yt = 777;
        ishmem_team_config_t xc = {3}, yc = {4};
        CHECK_EQ(ishmem_team_split_2d(ISHMEM_TEAM_WORLD, xr, &xc, ISHMEM_TEAM_NUM_CONTEXTS, &xt, &yc,
                                      ISHMEM_TEAM_NUM_CONTEXTS, &yt),
                 0);
        int x = xr < n ? xr : n;
        int row = me / x, col = me % x;
        int xsize = (n - row * x) < x ? n - row * x : x;
        int ysize = (n - col + x - 1) / x;
        char name[32];
        snprintf(name, sizeof name, "x-axis(%d)", xr);
        check_members(xt, name, row * x, 1, xsize);
        snprintf(name, sizeof name, "y-axis(%d)", xr);
        check_members(yt, name, col, x, ysize);
        CHECK_EQ(ishmem_team_my_pe(xt), col);
        CHECK_EQ(ishmem_team_my_pe(yt), row);
        CHECK(xt != yt, "x and y teams share handle %d", xt);
        ishmem_team_config_t got = {0};
        CHECK_EQ(ishmem_team_get_config(xt, ISHMEM_TEAM_NUM_CONTEXTS, &got), 0);
        CHECK_EQ(got.num_contexts, 3);
        CHECK_EQ(ishmem_team_get_config(yt, ISHMEM_TEAM_NUM_CONTEXTS, &got), 0);
        CHECK_EQ(got.num_contexts, 4);
        /* x team PE j and y team PE i meet at world row*x + j / i*x + col */
        CHECK_EQ(ishmem_team_translate_pe(xt, col, yt), row);
        ishmem_team_destroy(xt);
        ishmem_team_destroy(yt);
    }

    /* destroy, then the next split gets the freed handle back */
    ishmem_team_t a = ISHMEM_TEAM_INVALID, b = ISHMEM_TEAM_INVALID;
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &a), 0);
    check_members(a, "copy of world", 0, 1, n);
    ishmem_team_destroy(a);
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &b), 0);
    CHECK(a == b, "the freed handle %d is not reused (got %d)", a, b);
    for (int k = 0; k < 50; k++) /* back-to-back syncs on a reused slot */
        CHECK_EQ(ishmem_team_sync(b), 0);
    ishmem_team_destroy(b);

    /* a split of ISHMEM_TEAM_INVALID creates nothing */
    ishmem_team_t none = 5;
    CHECK(ishmem_team_split_strided(ISHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &none) != 0, "split of INVALID");
    CHECK_EQ(none, ISHMEM_TEAM_INVALID);

    /* arguments that describe no team of the parent (issue 14): nonzero status and
     * ISHMEM_TEAM_INVALID on every PE, and the job goes on (they used to end it) */
    struct { int start, stride, size; } no[] = {
        {0, 1, 0},      /* size 0 */
        {0, 1, -2},     /* negative size */
        {0, 1, n + 1},  /* larger than the parent */
        {n, 1, 1},      /* start outside */
        {-1, 1, 1},     /* negative start */
        {0, 1 + n, 2},  /* the second PE outside (n >= 2) */
        {n - 1, 1, 2},  /* runs past the last PE */
        {0, -1, 2},     /* runs below PE 0 */
        {0, 0, 2},      /* stride 0 names one PE twice */
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        if (n < 2 && no[i].size == 2)
            continue;
        ishmem_team_t t = 77;
        int rc = ishmem_team_split_strided(ISHMEM_TEAM_WORLD, no[i].start, no[i].stride, no[i].size, NULL, 0, &t);
        CHECK(rc != 0, "split_strided(start %d, stride %d, size %d) returned 0", no[i].start, no[i].stride, no[i].size);
        CHECK(t == ISHMEM_TEAM_INVALID, "split_strided(start %d, stride %d, size %d) gave team %d", no[i].start,
              no[i].stride, no[i].size, t);
    }
    {
        ishmem_team_t x = 77, y = 77;
        CHECK(ishmem_team_split_2d(ISHMEM_TEAM_WORLD, 0, NULL, 0, &x, NULL, 0, &y) != 0, "split_2d(xrange 0)");
        CHECK(x == ISHMEM_TEAM_INVALID && y == ISHMEM_TEAM_INVALID, "split_2d(xrange 0): %d %d", x, y);
        x = y = 77;
        CHECK(ishmem_team_split_2d(ISHMEM_TEAM_WORLD, -3, NULL, 0, &x, NULL, 0, &y) != 0, "split_2d(xrange -3)");
        CHECK(x == ISHMEM_TEAM_INVALID && y == ISHMEM_TEAM_INVALID, "split_2d(xrange -3): %d %d", x, y);
    }
    /* ... a valid split afterwards works, and gets the lowest free handle */
    ishmem_team_t after = ISHMEM_TEAM_INVALID;
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &after), 0);
    CHECK_EQ(after, b);
    CHECK_EQ(ishmem_team_sync(after), 0);
    ishmem_team_destroy(after);

    ishmem_team_destroy(rev);
    if (odd != ISHMEM_TEAM_INVALID)
        ishmem_team_destroy(odd);
    if (even != ISHMEM_TEAM_INVALID)
        ishmem_team_destroy(even);
    ishmem_barrier_all();
    return test_finish("team");
}
