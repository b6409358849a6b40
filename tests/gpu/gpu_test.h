/* gpu_test.h: the check macro of the GPU tests (tests/gpu, run by scripts/gpu-check.sh).
 * A failed check prints "FAIL: [PE n] file:line: message" and counts; gpu_test_end prints one
 * summary line per PE and gives the exit status. C and C++/CUDA. */
#ifndef ISHMEM_GPU_TEST_H
#define ISHMEM_GPU_TEST_H
#include <stdio.h>

static int gt_me = -1, gt_checks, gt_fails;

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        gt_checks++;                                                                            \
        if (!(cond)) {                                                                          \
            gt_fails++;                                                                         \
            char gt_msg[256];                                                                   \
            snprintf(gt_msg, sizeof gt_msg, __VA_ARGS__);                                       \
            fprintf(stderr, "FAIL: [PE %d] %s:%d: %s (%s)\n", gt_me, __FILE__, __LINE__, #cond, gt_msg); \
        }                                                                                       \
    } while (0)

static int gpu_test_end(const char *name) {
    printf("%s: PE %d: %d checks, %d failed%s\n", name, gt_me, gt_checks, gt_fails, gt_fails ? "" : " OK");
    fflush(stdout);
    return gt_fails ? 1 : 0;
}
#endif
