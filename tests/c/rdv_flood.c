/* rdv_flood PORT N HOLD_S: a stranger without the job's id floods a rendezvous server on
 * 127.0.0.1:PORT (issue 30, item 4) with N connections: half stay silent, half announce a frame
 * of 1 MiB + 1 and send 512 KiB of it. All are held HOLD_S seconds while the job starts.
 * Prints how many connected and how many the server closed; exit 0 once done, 2 when fewer
 * than N/2 could connect (the flood did not happen). Writes "ready" to stdout's line once the
 * flood is in place. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BIG (512 * 1024)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: rdv_flood PORT N HOLD_S\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    double hold = atof(argv[3]);
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl = {(rlim_t)n + 64, (rlim_t)n + 64};
    setrlimit(RLIMIT_NOFILE, &rl);
    int *fd = calloc(n, sizeof *fd);
    size_t *sent = calloc(n, sizeof *sent);
    int *gone = calloc(n, sizeof *gone);
    static char junk[64 * 1024];
    memset(junk, 0x01, sizeof junk);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int connected = 0;
    for (int i = 0; i < n; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&a, sizeof a) != 0) {
            if (fd[i] >= 0)
                close(fd[i]);
            fd[i] = -1;
            continue;
        }
        connected++;
        fcntl(fd[i], F_SETFL, O_NONBLOCK);
        if (i % 2) {
            unsigned char h[5];
            unsigned len = htonl((1u << 20) + 1);
            memcpy(h, &len, 4);
            h[4] = 1; /* T_HELLO */
            if (write(fd[i], h, 5) != 5)
                gone[i] = 1;
        }
    }
    double end = now() + hold;
    int said_ready = 0;
    while (now() < end) {
        int progress = 0;
        for (int i = 1; i < n; i += 2) {
            if (fd[i] < 0 || gone[i] || sent[i] >= BIG)
                continue;
            size_t want = BIG - sent[i] < sizeof junk ? BIG - sent[i] : sizeof junk;
            ssize_t w = write(fd[i], junk, want);
            if (w > 0) {
                sent[i] += w;
                progress = 1;
            } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                gone[i] = 1;
            }
        }
        if (!progress && !said_ready) {
            printf("ready\n");
            fflush(stdout);
            said_ready = 1;
        }
        if (!progress)
            usleep(20000);
    }
    /* which connections did the server close? */
    int closed = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (fd[i] < 0)
            continue;
        total += sent[i];
        char b[4096];
        ssize_t r;
        while ((r = read(fd[i], b, sizeof b)) > 0) {
        }
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || gone[i])
            closed++;
        close(fd[i]);
    }
    if (!said_ready)
        printf("ready\n");
    printf("flood: %d of %d connected, %zu KiB sent, %d closed by the server\n", connected, n, total / 1024, closed);
    return connected >= n / 2 ? 0 : 2;
}
