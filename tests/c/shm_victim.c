/* shm_victim: the job that tests/scripts/shm_attack.sh starts beside an attacker of another
 * user (issue 30, item 1). Every PE puts a value into the next PE's heap word and global,
 * 1,000 rounds with a barrier each, and checks what it received: a job whose control file or
 * heap another user made and shares would see the attacker's values or fail to start.
 * "shm_victim --pmi1-kvsname" (no ishmem call) asks the PMI-1 server of PMI_FD (MPICH hydra)
 * for the job's kvsname, prints it and exits: shm_attack.sh hands it to the attacker as the
 * launcher's key (the PE started afterwards on the same connection sends its own init). */
#include "test_util.h"

#include <unistd.h>

/* One request line to the PMI-1 server, its reply line into buf. */
static int pmi1_ask(int fd, const char *req, char *buf, size_t cap) {
    size_t n = strlen(req), at = 0;
    buf[0] = 0;
    if (write(fd, req, n) != (ssize_t)n)
        return -1;
    while (at + 1 < cap) {
        ssize_t r = read(fd, buf + at, 1);
        if (r != 1)
            return -1;
        if (buf[at] == '\n')
            break;
        at++;
    }
    buf[at] = 0;
    return 0;
}

static int print_kvsname(void) {
    const char *fds = getenv("PMI_FD");
    char buf[1024];
    if (!fds) {
        fprintf(stderr, "shm_victim --pmi1-kvsname: PMI_FD is not set\n");
        return 2;
    }
    int fd = atoi(fds);
    if (pmi1_ask(fd, "cmd=init pmi_version=1 pmi_subversion=1\n", buf, sizeof buf) || !strstr(buf, "rc=0") ||
        pmi1_ask(fd, "cmd=get_my_kvsname\n", buf, sizeof buf)) {
        fprintf(stderr, "shm_victim --pmi1-kvsname: the PMI-1 server answered '%s'\n", buf);
        return 2;
    }
    const char *k = strstr(buf, "kvsname=");
    if (!k) {
        fprintf(stderr, "shm_victim --pmi1-kvsname: no kvsname in '%s'\n", buf);
        return 2;
    }
    k += strlen("kvsname=");
    printf("%.*s\n", (int)strcspn(k, " \r"), k);
    fflush(stdout);
    return 0;
}

long victim_global; /* .bss: symmetric */

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--pmi1-kvsname"))
        return print_kvsname();
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
