/* fence_order: ishmem_fence orders an AMO (and the signal of a put-with-signal) before a later
 * store to the same PE (issue 27, item 1). While a job spans nodes every AMO goes through the
 * network, even to a PE of the same node, while a put to that PE is a plain store: the fence
 * must make the AMO arrive first.
 *
 * Pairs of PEs of one node (0,1), (2,3), ...: the even PE (writer) runs rounds r = 1..ROUNDS of
 *   add:     atomic_add(x, 1) -> fence -> p(flag, r)
 *   set:     atomic_set(x, r) -> fence -> p(flag, r)
 *   signal:  put_signal(data <- r, sig += 1) -> fence -> p(flag, r)
 * on the odd PE, which waits for flag >= r, reads x (or sig) with an atomic fetch and counts the
 * rounds where it lags (< r), then acknowledges the round. Each variant runs on the heap and on a
 * symmetric global (with ISHMEM_OFI_STAGING=always the heap's AMOs stay on the node, the
 * globals' do not). A PE without a partner on its node runs the rounds on itself.
 * Fails with the count of lagging rounds per variant. */
#include "test_util.h"

/* Rounds per variant: argv[1], default 300 (enough: without the fix a few percent to most of the
 * rounds lag, whatever the provider). */
static long ROUNDS = 300;

enum { ADD, SET, SIGNAL, NVAR };
static const char *const VAR_NAME[NVAR] = {"atomic_add", "atomic_set", "put_signal"};

/* The symmetric globals: x, flag, ack, data, sig. */
static long g_x, g_flag, g_ack, g_data;
static uint64_t g_sig;

struct objs {
    const char *where;
    long *x, *flag, *ack, *data;
    uint64_t *sig;
};

static void reset(struct objs *o) {
    *o->x = 0;
    *o->flag = 0;
    *o->ack = 0;
    *o->data = 0;
    *o->sig = 0;
    ishmem_barrier_all();
}

/* Writer side of one variant towards `peer`. */
static void write_rounds(struct objs *o, int var, int peer, int self) {
    for (long r = 1; r <= ROUNDS; r++) {
        switch (var) {
        case ADD:
            ishmem_long_atomic_add(o->x, 1, peer);
            break;
        case SET:
            ishmem_long_atomic_set(o->x, r, peer);
            break;
        default:
            ishmem_long_put_signal(o->data, &r, 1, o->sig, 1, ISHMEM_SIGNAL_ADD, peer);
            break;
        }
        ishmem_fence();
        ishmem_long_p(o->flag, r, peer);
        if (!self)
            ishmem_long_wait_until(o->ack, ISHMEM_CMP_GE, r);
        else {
            long seen = var == SIGNAL ? (long)ishmem_signal_fetch(o->sig) : ishmem_long_atomic_fetch(o->x, t_me);
            CHECK(seen >= r, "%s on %s (self): round %ld: %ld", VAR_NAME[var], o->where, r, seen);
        }
    }
}

/* Reader side: returns the number of rounds in which x (or sig, or data) lagged the flag. */
static int read_rounds(struct objs *o, int var, int writer) {
    int lag = 0;
    long first = 0, first_seen = 0;
    for (long r = 1; r <= ROUNDS; r++) {
        ishmem_long_wait_until(o->flag, ISHMEM_CMP_GE, r);
        long seen = var == SIGNAL ? (long)ishmem_signal_fetch(o->sig) : ishmem_long_atomic_fetch(o->x, t_me);
        int bad = seen < r;
        if (var == SIGNAL)
            bad |= *(volatile long *)o->data != r;
        if (bad && lag++ == 0) {
            first = r;
            first_seen = seen;
        }
        ishmem_long_p(o->ack, r, writer);
    }
    CHECK(lag == 0, "%s -> fence -> p to a PE of the same node, on %s: the %s lagged the flag in %d of %d rounds "
          "(first: round %ld saw %ld)", VAR_NAME[var], o->where, var == SIGNAL ? "signal" : "AMO", lag, (int)ROUNDS,
          first, first_seen);
    return lag;
}

int main(int argc, char **argv) {
    test_init();
    if (argc > 1)
        ROUNDS = atol(argv[1]);
    struct objs heap = {"the heap", ishmem_calloc(1, sizeof(long)), ishmem_calloc(1, sizeof(long)),
                        ishmem_calloc(1, sizeof(long)), ishmem_calloc(1, sizeof(long)),
                        ishmem_calloc(1, sizeof(uint64_t))};
    struct objs glob = {"a symmetric global", &g_x, &g_flag, &g_ack, &g_data, &g_sig};
    CHECK(heap.x && heap.flag && heap.ack && heap.data && heap.sig, "ishmem_calloc failed");
    if (t_failures)
        return test_finish("fence_order");

    /* partner: the other PE of the pair, if it is on this node */
    int partner = (t_me % 2 == 0) ? t_me + 1 : t_me - 1;
    if (partner >= t_npes || !t_same_node(partner))
        partner = -1;

    struct objs *mem[2] = {&heap, &glob};
    int total = 0;
    for (int m = 0; m < 2; m++) {
        for (int var = 0; var < NVAR; var++) {
            reset(mem[m]);
            if (partner < 0)
                write_rounds(mem[m], var, t_me, 1);
            else if (t_me % 2 == 0)
                write_rounds(mem[m], var, partner, 0);
            else
                total += read_rounds(mem[m], var, partner);
            ishmem_barrier_all();
        }
    }
    if (partner >= 0 && t_me % 2 == 1)
        printf("fence_order: PE %d (reader, writer PE %d): %d lagging rounds in all\n", t_me, partner, total);
    return test_finish("fence_order");
}
