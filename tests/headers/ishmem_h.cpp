// ishmem.h alone in a C++17 translation unit (compiled with -Wall -Wextra -Werror [-pedantic]).
#include <ishmem.h>

int header_test_cxx();
int header_test_cxx() {
    int x = 0;
    void (*init)() = ishmem_init;
    (void)init;
    (void)sizeof(ishmem_int_g(&x, 0));
    (void)sizeof(ishmem_g(&x, 0)); // an overload
    return ISHMEM_MAJOR_VERSION * 100 + ISHMEM_MINOR_VERSION;
}
