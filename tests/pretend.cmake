# Pretend nodes and a private Slurm (issue 18, items 4 and 5); included by CMakeLists.txt,
# needs SCRIPTS, EXPECT_FAIL, SH_PROGRAM, TEST_TIMEOUT, SLURM_DIR, SLURM_CONF_FILE and the MPIRUN_OPENMPI / MPIEXEC_MPICH /
# ISHMEM_RUN results from there.
#
# Fixtures (CTest runs the setup before and the cleanup after any test that needs them):
#   pretend   pretend.up / pretend.down: scripts/pretend-nodes.sh up 2 <build>/pretend
#   slurm     slurm.up / slurm.down: scripts/slurm.sh up /tmp/ishmem-slurm-<hash of the build dir>
# Both need root; elsewhere every test here is reported as skipped (exit 77 or a "skipped: "
# line), and costs nothing. Labels: pretend, slurm.
#
# add_pretend(<test> <launcher> <np> <ppn> [LABELS l...] [ENV var=value...]
#             EXPECT <expect_fail.sh arguments: [flags...] regex timeout_s>
#             COMMAND <program> [args...])
#   runs <program> as <np> PEs, <ppn> per pretend node, under <launcher> (mpirun, mpiexec,
#   srun-pmix, srun-pmi2, uid-loop, ishmrun) through scripts/run-pretend.sh, checked by
#   expect_fail.sh with the EXPECT arguments. In args, @NP@ becomes <np>; with uid-loop,
#   @RANK@ the rank. For example:
#     add_pretend(setup.pretend_openmpi.4 mpirun 4 2
#       EXPECT --success --merge "^PASS: setup \\(4 PEs\\)$" 80 COMMAND $<TARGET_FILE:setup> PMIX 4)

set(PRETEND_DIR "${CMAKE_CURRENT_BINARY_DIR}/pretend")
set(PRETEND_ENV "ISHMEM_PRETEND_DIR=${PRETEND_DIR}" "SLURM_CONF=${SLURM_CONF_FILE}")
# The launcher programs found by CMakeLists.txt, for run-pretend.sh.
set(PRETEND_LAUNCHERS "")
if(ISHMEM_RUN)
  list(APPEND PRETEND_LAUNCHERS "ISHMRUN=${ISHMEM_RUN}")
endif()
if(MPIRUN_OPENMPI)
  list(APPEND PRETEND_LAUNCHERS "MPIRUN=${MPIRUN_OPENMPI}")
endif()
if(MPIEXEC_MPICH)
  list(APPEND PRETEND_LAUNCHERS "MPIEXEC=${MPIEXEC_MPICH}")
endif()

add_test(NAME pretend.up COMMAND ${SCRIPTS}/pretend-nodes.sh up 2 ${PRETEND_DIR})
add_test(NAME pretend.down COMMAND ${SCRIPTS}/pretend-nodes.sh down ${PRETEND_DIR})
set_tests_properties(pretend.up PROPERTIES FIXTURES_SETUP pretend)
set_tests_properties(pretend.down PROPERTIES FIXTURES_CLEANUP pretend)
set_tests_properties(pretend.up pretend.down PROPERTIES LABELS "pretend" TIMEOUT ${TEST_TIMEOUT}
  SKIP_RETURN_CODE 77)

add_test(NAME slurm.up COMMAND ${SCRIPTS}/slurm.sh up ${SLURM_DIR})
add_test(NAME slurm.down COMMAND ${SCRIPTS}/slurm.sh down ${SLURM_DIR})
set_tests_properties(slurm.up PROPERTIES FIXTURES_SETUP slurm)
set_tests_properties(slurm.down PROPERTIES FIXTURES_CLEANUP slurm)
set_tests_properties(slurm.up slurm.down PROPERTIES LABELS "slurm" TIMEOUT ${TEST_TIMEOUT}
  SKIP_RETURN_CODE 77)

# the cluster itself: srun --mpi=list, and 2 ranks under srun --mpi=pmix and --mpi=pmi2
add_test(NAME slurm.mpi_list COMMAND ${SCRIPTS}/slurm.sh check ${SLURM_DIR} list)
add_test(NAME slurm.hostname.srun_pmix.2 COMMAND ${SCRIPTS}/slurm.sh check ${SLURM_DIR} pmix 2)
add_test(NAME slurm.hostname.srun_pmi2.2 COMMAND ${SCRIPTS}/slurm.sh check ${SLURM_DIR} pmi2 2)
set_tests_properties(slurm.mpi_list slurm.hostname.srun_pmix.2 slurm.hostname.srun_pmi2.2
  PROPERTIES LABELS "slurm" TIMEOUT ${TEST_TIMEOUT} FIXTURES_REQUIRED slurm SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "PASS: slurm" FAIL_REGULAR_EXPRESSION "FAIL: ")

function(add_pretend name launcher np ppn)
  cmake_parse_arguments(P "" "" "LABELS;ENV;EXPECT;COMMAND" ${ARGN})
  if(NOT P_EXPECT OR NOT P_COMMAND)
    message(FATAL_ERROR "add_pretend(${name}): EXPECT and COMMAND are required")
  endif()
  set(fixtures pretend)
  set(labels pretend ${P_LABELS})
  if(launcher MATCHES "^srun-")
    list(APPEND fixtures slurm)
    list(APPEND labels slurm)
  elseif(launcher STREQUAL "mpirun" AND NOT MPIRUN_OPENMPI)
    return()
  elseif(launcher STREQUAL "mpiexec" AND NOT MPIEXEC_MPICH)
    return()
  endif()
  add_test(NAME ${name} COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} ${P_EXPECT}
    ${SCRIPTS}/run-pretend.sh ${launcher} ${np} ${ppn} ${P_COMMAND})
  set(env ${PRETEND_ENV} ${PRETEND_LAUNCHERS} ${P_ENV})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${TEST_TIMEOUT} LABELS "${labels}"
    FIXTURES_REQUIRED "${fixtures}" ENVIRONMENT "${env}"
    SKIP_REGULAR_EXPRESSION "(^|\n)skipped: ")
endfunction()

# The harness itself: 4 ranks as 2 nodes of 2 under every launcher, each rank printing its
# hostname, IPC and mount namespaces and the files it sees in its /dev/shm (and, under
# mpiexec and srun --mpi=pmi2, exchanging hostnames through the launcher's PMI-1 store).
set(_pretend_launchers uid-loop srun-pmix srun-pmi2)
if(MPIRUN_OPENMPI)
  list(APPEND _pretend_launchers mpirun)
endif()
if(MPIEXEC_MPICH)
  list(APPEND _pretend_launchers mpiexec)
endif()
foreach(l ${_pretend_launchers})
  string(REPLACE "-" "_" t "${l}")
  add_test(NAME pretend_payload.${t}.4 COMMAND ${SCRIPTS}/pretend-check.sh ${l} 4 2)
  set(fixtures pretend)
  set(labels pretend)
  if(l MATCHES "^srun-")
    list(APPEND fixtures slurm)
    list(APPEND labels slurm)
  endif()
  set(env ${PRETEND_ENV} ${PRETEND_LAUNCHERS})
  set_tests_properties(pretend_payload.${t}.4 PROPERTIES TIMEOUT ${TEST_TIMEOUT}
    LABELS "${labels}" FIXTURES_REQUIRED "${fixtures}" ENVIRONMENT "${env}"
    SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "PASS: pretend" FAIL_REGULAR_EXPRESSION "FAIL: ")
endforeach()

# The library on pretend nodes: 4 PEs as 2 nodes of 2 under every launcher. Each launcher's own
# exchange (PMIx, PMI-1, the unique id's TCP rendezvous) carries the node identities and the
# network addresses; the PEs of the other node are reached over libfabric (tcp;ofi_rxm on
# loopback), those of their own node through shared memory. Every functional program must pass.
set(_pretend_fabric_env "FI_TCP_IFACE=lo" "ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm")
foreach(l mpirun mpiexec srun-pmix srun-pmi2)
  string(REPLACE "-" "_" t "${l}")
  if(l STREQUAL "mpirun" OR l STREQUAL "srun-pmix")
    set(rt PMIX)
  else()
    set(rt PMI)
  endif()
  foreach(p ${FUNCTIONAL})
    set(args "")
    if(p STREQUAL "setup")
      set(args ${rt} 4)
    endif()
    add_pretend(${p}.pretend_${t}.4 ${l} 4 2 ENV ${_pretend_fabric_env}
      EXPECT --success --merge "^PASS: ${p} \\(4 PEs\\)$" 80 COMMAND $<TARGET_FILE:${p}> ${args})
  endforeach()
endforeach()
# the OpenSHMEM program built by ishmem-oshcc (CMakeLists.txt), unchanged, as 2 nodes of 2
foreach(l mpirun mpiexec)
  add_pretend(openshmem.pretend_${l}.4 ${l} 4 2 ENV ${_pretend_fabric_env}
    EXPECT --success --merge "^PASS: openshmem \\(4 PEs\\)$" 80 COMMAND ${OPENSHMEM_PROG})
endforeach()
# ctx_quiet with a stopped PE (issue 25; fabric.cmake has it under ISHMEM_NODE_SPLIT)
add_pretend(ctx_quiet.pretend_mpirun.4 mpirun 4 2 ENV ${_pretend_fabric_env} ISHMEM_PEER_TIMEOUT_S=20
  EXPECT --success --merge "^PASS: ctx_quiet \\(4 PEs\\)$" 80 COMMAND $<TARGET_FILE:ctx_quiet>)
add_pretend(uid.pretend_uid_loop.4 uid-loop 4 2 ENV ${_pretend_fabric_env}
  EXPECT --success --merge "^PASS: uid \\(4 PEs\\)$" 80
  COMMAND $<TARGET_FILE:uid> file ${CMAKE_CURRENT_BINARY_DIR}/pretend-uid @RANK@ 4)

# srun without a PMI plugin (--mpi=none) gives the tasks no exchange: init must say so instead of
# running every task as a job of 1 PE.
add_test(NAME bad.srun_no_pmi.2 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --merge
  "started by srun as one of 2 tasks, but srun gave no PMI service" 10
  ${SCRIPTS}/srun-local.sh none 2 $<TARGET_FILE:setup> PMIX 2)
set_tests_properties(bad.srun_no_pmi.2 PROPERTIES LABELS "slurm;negative" TIMEOUT ${TEST_TIMEOUT}
  FIXTURES_REQUIRED slurm ENVIRONMENT "SLURM_CONF=${SLURM_CONF_FILE}"
  SKIP_REGULAR_EXPRESSION "(^|\n)skipped: ")
