/* ishmem.h alone in a C11 translation unit (compiled with -Wall -Wextra -Werror [-pedantic]). */
#include <ishmem.h>

int header_test_c(void);
int header_test_c(void) {
    int x = 0;
    void (*init)(void) = ishmem_init;
    (void)init;
    (void)sizeof(ishmem_int_g(&x, 0));
    (void)sizeof(ishmem_g(&x, 0)); /* a generic name */
    return ISHMEM_MAJOR_VERSION * 100 + ISHMEM_MINOR_VERSION;
}
