/* globals_race.c: issue 27 (minor). ishmem_init moves the executable's data segment into shared
 * memory (copy, then map the copy over the same addresses). Another thread that keeps storing
 * into a global meanwhile must lose none of its stores: here it increments a global (in .data)
 * and a private count in step, across ishmem_init, and the two must agree. Repeated a few times
 * per run (each init sees stores in flight). */
#include "test_util.h"
#include <pthread.h>
#include <unistd.h>

/* 16 MiB of initialized data (moved by init: the copy takes a while, a window for the thread's
 * stores); the counter is its first word, so it is copied first */
long g_big[2 << 20] = {1};
#define g_counter (*(volatile long *)&g_big[0])
static volatile int g_stop;
static volatile long g_mine;

static void *spin(void *arg) {
    (void)arg;
    long mine = 1;
    while (!g_stop) {
        g_counter = g_counter + 1;
        mine++;
        g_mine = mine;
    }
    g_mine = mine;
    return NULL;
}

int main(void) {
    pthread_t th;
    pthread_create(&th, NULL, spin, NULL);
    usleep(20000); /* the thread is storing */
    ishmem_init();
    test_init_ids();
    usleep(20000);
    g_stop = 1;
    pthread_join(th, NULL);
    CHECK(g_counter == g_mine, "the global holds %ld but the thread stored %ld increments: %ld lost in ishmem_init's move of the data segment",
          g_counter, g_mine, g_mine - g_counter);
    return test_finish("globals_race");
}
