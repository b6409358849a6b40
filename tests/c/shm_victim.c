/* shm_victim: the job that tests/scripts/shm_attack.sh starts beside an attacker of another
 * user (issue 30, item 1). Every PE puts a value into the next PE's heap word and global,
 * 1,000 rounds with a barrier each, and checks what it received: a job whose control file or
 * heap another user made and shares would see the attacker's values or fail to start. */
#include "test_util.h"

#include <unistd.h>

long victim_global; /* .bss: symmetric */

int main(void) {
    /* RDV_WAIT=<file> (tests/scripts/rdv_flood.sh): wait until the file exists before init */
    const char *go = getenv("RDV_WAIT");
    for (int i = 0; go && i < 1200 && access(go, F_OK) != 0; i++)
        usleep(50000);
    test_init();
    long *word = ishmem_malloc(sizeof(long));
    CHECK(word != NULL, "ishmem_malloc failed");
    if (!word)
        return 1;
    int next = (t_me + 1) % t_npes, prev = (t_me + t_npes - 1) % t_npes;
    long bad = 0;
    for (long r = 1; r <= 1000; r++) {
        ishmem_long_p(word, r * 1000 + t_me, next);
        ishmem_long_p(&victim_global, -(r * 1000 + t_me), next);
        ishmem_barrier_all();
        if (*word != r * 1000 + prev || victim_global != -(r * 1000 + prev))
            bad++;
        ishmem_barrier_all();
    }
    CHECK(bad == 0, "%ld of 1000 rounds read a value the previous PE did not put", bad);
    return test_finish("shm_victim");
}
