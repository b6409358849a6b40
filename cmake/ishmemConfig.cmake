# find_package(ishmem) support: defines the imported target ishmem::ishmem and
# ISHMEM_RUN (the ishmrun launcher), ISHMEM_INFO (ishmem-info) and ISHMEM_CC / ISHMEM_CXX (the
# ishmemcc / ishmemc++ wrappers). Relocatable: paths are relative to this file.
get_filename_component(_ishmem_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET ishmem::ishmem)
  add_library(ishmem::ishmem SHARED IMPORTED)
  set_target_properties(ishmem::ishmem PROPERTIES
    IMPORTED_LOCATION "${_ishmem_prefix}/lib/libishmem.so"
    IMPORTED_SONAME "@SONAME@"
    INTERFACE_INCLUDE_DIRECTORIES "${_ishmem_prefix}/include")
endif()
set(ISHMEM_RUN "${_ishmem_prefix}/bin/ishmrun" CACHE FILEPATH "ishmrun launcher")
set(ISHMEM_INFO "${_ishmem_prefix}/bin/ishmem-info" CACHE FILEPATH "ishmem-info")
set(ISHMEM_CC "${_ishmem_prefix}/bin/ishmemcc" CACHE FILEPATH "ishmemcc compiler wrapper")
set(ISHMEM_CXX "${_ishmem_prefix}/bin/ishmemc++" CACHE FILEPATH "ishmemc++ compiler wrapper")
set(ISHMEM_FOUND TRUE)
unset(_ishmem_prefix)
