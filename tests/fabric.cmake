# Fabric mode (issue 10): the functional programs with their PEs on 2 pretend nodes
# (ISHMEM_NODE_SPLIT=2: PEs 0..n/2-1 and n/2..n-1 reach each other only through the launcher's
# exchange and libfabric), on loopback only (FI_TCP_IFACE=lo, FI_SOCKETS_IFACE=lo).
# Included by CMakeLists.txt after add_run and FUNCTIONAL are defined.
#
#   <prog>.fabric_tcp.<launcher>.<n>      tcp;ofi_rxm, n = 2 and 4, under ishmrun, mpirun, mpiexec
#   <prog>.fabric_tcp_staged.<l>.4        tcp;ofi_rxm with ISHMEM_OFI_STAGING=always: every access
#                                         to another node's heap through its staging mailbox (the
#                                         path of the GPU heap across nodes), ishmrun and mpirun
#   <prog>.fabric_sockets.<launcher>.<n>  sockets, n = 2 and 4, under ishmrun and mpirun
#                                         (-DISHMEM_TEST_SOCKETS=OFF leaves them out; `make
#                                         check-sockets` runs only them). They used to stall for
#                                         30 s and more under CPU contention: sockets' FI_FENCE
#                                         deadlocked two PEs fencing towards each other (no longer
#                                         used: see transport/fabric fence) and its progress
#                                         thread spun 10 ms after every operation (now
#                                         FI_SOCKETS_PE_WAITTIME=0 by default)
#   fabric.libfabric                      where libfabric.so.1 is absent: one test reported as
#                                         skipped, saying so (nothing is counted as passed)
# Labels: fabric, and the launcher's.

find_library(LIBFABRIC_LIBRARY NAMES fabric libfabric.so.1)
if(NOT LIBFABRIC_LIBRARY)
  add_test(NAME fabric.libfabric COMMAND ${SH_PROGRAM} -c
    "echo 'skipped: libfabric.so.1 not found (Debian: libfabric1): the fabric-mode runs are not made'; exit 77")
  set_tests_properties(fabric.libfabric PROPERTIES LABELS "fabric" SKIP_RETURN_CODE 77)
  return()
endif()

set(FABRIC_ENV "ISHMEM_NODE_SPLIT=2" "FI_TCP_IFACE=lo" "FI_SOCKETS_IFACE=lo")

# The environment that selects provider variant `prov` (tcp, tcp_staged, sockets), into `out`.
function(fabric_provider_env prov out)
  if(prov STREQUAL "tcp")
    set(${out} "ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm" PARENT_SCOPE)
  elseif(prov STREQUAL "tcp_staged")
    set(${out} "ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm;ISHMEM_OFI_STAGING=always" PARENT_SCOPE)
  else()
    set(${out} "ISHMEM_OFI_PROVIDER=${prov}" PARENT_SCOPE)
  endif()
endfunction()

function(add_fabric prov launchers nps)
  fabric_provider_env(${prov} provider_env)
  foreach(l ${launchers})
    if(l STREQUAL "openmpi" AND NOT MPIRUN_OPENMPI)
      continue()
    endif()
    if(l STREQUAL "mpich" AND NOT MPIEXEC_MPICH)
      continue()
    endif()
    foreach(n ${nps})
      if(l STREQUAL "ishmrun")
        set(cmd ${ISHMEM_RUN} --timeout 80 -n ${n})
        set(rt ISHMRUN)
      elseif(l STREQUAL "openmpi")
        set(cmd ${MPIRUN_OPENMPI} --allow-run-as-root --oversubscribe -np ${n})
        set(rt PMIX)
      else()
        set(cmd ${MPIEXEC_MPICH} -n ${n})
        set(rt PMI)
      endif()
      foreach(p ${FUNCTIONAL})
        set(args "")
        if(p STREQUAL "setup")
          set(args ${rt} ${n})
        endif()
        set(t ${p}.fabric_${prov}.${l}.${n})
        add_run(${t} "^PASS: ${p} \\(${n} PEs\\)$" "fabric;${l}" ${cmd} $<TARGET_FILE:${p}> ${args})
        set_tests_properties(${t} PROPERTIES ENVIRONMENT "${FABRIC_ENV};${provider_env}")
      endforeach()
    endforeach()
  endforeach()
endfunction()

add_fabric(tcp "ishmrun;openmpi;mpich" "2;4")
# The staged heap (the path of the GPU heap across nodes, core/stage.rs) on CPUs.
add_fabric(tcp_staged "ishmrun;openmpi" "4")
option(ISHMEM_TEST_SOCKETS "register the fabric runs over the sockets provider" ON)
if(ISHMEM_TEST_SOCKETS)
  add_fabric(sockets "ishmrun;openmpi" "2;4")
endif()

# Faults across nodes: a job of 4 PEs started by a plain sh script (unique-id init, no launcher
# to end it) in which PE 1 dies, exits without finalize or fails. With 2 pretend nodes PE 1's node
# peer notices it (pidfd) and tells the other node through the network; with 4 (every PE alone)
# the others' progress threads find PE 1 unreachable. Every other PE must end within 10 s.
foreach(split 2 4)
  foreach(mode sigkill no_finalize bad_pe global_exit)
    set(t bad.${mode}.uid_fabric_split${split}.4)
    add_test(NAME ${t} COMMAND ${SH_PROGRAM} ${SCRIPTS}/uid_crash.sh $<TARGET_FILE:uid_crash> ${mode} 4 10)
    set_tests_properties(${t} PROPERTIES TIMEOUT ${TEST_TIMEOUT} LABELS "fabric;negative"
      ENVIRONMENT "ISHMEM_NODE_SPLIT=${split};FI_TCP_IFACE=lo;ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm")
  endforeach()
endforeach()

# Issue 27 across 2 pretend nodes (tests/c/agree.c, add_agree of CMakeLists.txt): the late
# announcement crosses nodes (T = {0, 2}); memory calls and settings compared job-wide (each
# node agreed within itself before); the team areas' block refused; ishmem_align's common
# alignment from every PE's heap base (common_align read the node's slots by world PE).
set(AGREE_ENV ${FABRIC_ENV} "ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm")
add_agree(team_reuse "^PASS: team_reuse \\(4 PEs\\)$" 4 FLAGS --success ENV ${AGREE_ENV})
add_agree(malloc_barrier "^\\[PE [0-9]\\] ERROR: ishmem_malloc: ${MEMCALL}, but PE [0-9] (made another collective call|called ishmem_malloc)" 2 ENV ${AGREE_ENV})
set(MALLOC_NODES "ERROR: ishmem_malloc: collective call mismatch: this PE called ishmem_malloc\\(size (64|4096)\\) as world team call [0-9]+, but PE [0-9] called ishmem_malloc\\(size (64|4096)\\)")
add_agree(malloc_size "^\\[PE [0-9]\\] ${MALLOC_NODES}" 2 ENV ${AGREE_ENV})
add_agree(malloc_size "^\\[PE [0-9]\\] ${MALLOC_NODES}" 4 ENV ${AGREE_ENV})
add_agree(free_team_area "^\\[PE [0-3]\\] ${LIBBLOCK}" 4 ENV ${AGREE_ENV})
add_agree(align_nodes "^PASS: align_nodes \\(4 PEs\\)$" 4 FLAGS --success ENV ${AGREE_ENV})
# Issue 31: small all-send collectives across nodes as flag-in-data messages must not take a
# larger call's raw bytes left in the same scratch slot for their message, and a size mismatch
# is still reported.
add_agree(ll_scratch "^PASS: ll_scratch \\(2 PEs\\)$" 2 FLAGS --success ENV ${AGREE_ENV})
add_agree(ll_scratch "^PASS: ll_scratch \\(4 PEs\\)$" 4 FLAGS --success ENV ${AGREE_ENV})
add_agree(ll_size "^\\[PE [01]\\] ERROR: ishmem_fcollectmem: collective call [0-9]+ on team 0 differs between PEs" 2 ENV ${AGREE_ENV})
foreach(s "TEAMS_MAX;32;64" "COLL_SMALL_MAX;0;4096" "OFI_STAGING;always;auto" "BCAST_SCATTER_MIN;64;1048576")
  list(GET s 0 var)
  list(GET s 1 val)
  list(GET s 2 def)
  string(TOLOWER ${var} lc)
  add_agree(setting_${lc} "^\\[PE [0-3]\\] ERROR: ishmem_init: ISHMEM_${var} differs between PEs: ${def} on PEs 0-1, ${val} on PEs 2-3; every PE must use the same value$"
    4 ENV ${AGREE_ENV} ARGS setting ISHMEM_${var} ${val})
endforeach()

# stress across nodes: ISHMEM_THREAD_MULTIPLE, 4 threads per PE x 4 PEs on 2 pretend nodes,
# 2,000 seeded random operations per thread (puts, gets, fetch_inc tickets, adds, put_signal
# messages, quiet and fence from every thread at once), exact counts. Threads that quiet while
# others post are what the fabric's "quiet waits until nothing is outstanding" is about (a quiet
# that counted completions against a snapshot returned with an nbi get in flight).
set(_stress_provs tcp)
if(ISHMEM_TEST_SOCKETS)
  list(APPEND _stress_provs sockets)
endif()
foreach(prov ${_stress_provs})
  fabric_provider_env(${prov} provider_env)
  set(t stress.fabric_${prov}.ishmrun.4)
  add_run(${t} "^PASS: stress \\(4 PEs\\)$" "fabric;ishmrun;stress"
    ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:stress> 2000 4)
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "${FABRIC_ENV};${provider_env}")
endforeach()

# fence_order across nodes (issue 27, item 1): while the job spans nodes every AMO went through
# the provider, even to a PE of this node, while a put to that PE is a plain store; ishmem_fence
# must order the one before the other. Every provider variant, 4 PEs (pairs 0-1 and 2-3 on one
# pretend node each); 100 rounds per case over sockets (slow here, and without the fix most of
# its rounds lag), 300 elsewhere (without the fix: tens per case over tcp;ofi_rxm).
set(_fence_provs tcp tcp_staged)
if(ISHMEM_TEST_SOCKETS)
  list(APPEND _fence_provs sockets)
endif()
foreach(prov ${_fence_provs})
  fabric_provider_env(${prov} provider_env)
  set(rounds 300)
  if(prov STREQUAL "sockets")
    set(rounds 100)
  endif()
  set(t fence_order.fabric_${prov}.ishmrun.4)
  add_run(${t} "^PASS: fence_order \\(4 PEs\\)$" "fabric;ishmrun"
    ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:fence_order> ${rounds})
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "${FABRIC_ENV};${provider_env}")
endforeach()

# AMOs to a PE of this node while the job spans nodes (issue 31): CPU atomics on its mapped
# memory where the provider applies AMOs with the target CPU's atomics (tcp;ofi_rxm, sockets),
# so they complete while that PE is stopped (tests/c/node_amo.c). Before: every AMO went
# through the provider, node peers included (25 us per fetch_add on the same node at 4 PEs),
# and waited for the stopped PE's progress: the .amo_net variant (ISHMEMI_OFI_NODE_AMO_NET=1,
# the old routing) must fail that way. fence_order and order_mut keep the old routing's fence
# (an AMO through the provider, then a store to a node peer, as with NIC atomics) tested.
set(_node_amo_provs tcp)
if(ISHMEM_TEST_SOCKETS)
  list(APPEND _node_amo_provs sockets)
endif()
foreach(prov ${_node_amo_provs})
  fabric_provider_env(${prov} provider_env)
  set(t node_amo.fabric_${prov}.ishmrun.4)
  add_run(${t} "^PASS: node_amo \\(4 PEs\\)$" "fabric;ishmrun"
    ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:node_amo>)
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "${FABRIC_ENV};${provider_env}")
endforeach()
fabric_provider_env(tcp _na_env)
add_test(NAME node_amo.fabric_tcp.amo_net.ishmrun.4 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --merge
  "FAIL: \\[PE 0\\] AMOs to a stopped PE of this node did not complete in time" 60
  ${ISHMEM_RUN} --timeout 60 -n 4 $<TARGET_FILE:node_amo> 5)
set_tests_properties(node_amo.fabric_tcp.amo_net.ishmrun.4 PROPERTIES TIMEOUT ${TEST_TIMEOUT}
  LABELS "fabric;ishmrun;negative" ENVIRONMENT "${FABRIC_ENV};${_na_env};ISHMEMI_OFI_NODE_AMO_NET=1")
add_run(info.node_amos.fabric_tcp.ishmrun.2
  "^AMOs to PEs of this node: CPU atomics on their mapped memory \\(the provider applies AMOs with the target CPU's atomics\\)$"
  "fabric;ishmrun;env" ${ISHMEM_RUN} --timeout 80 -n 2 $<TARGET_FILE:setup> ISHMRUN 2)
set_tests_properties(info.node_amos.fabric_tcp.ishmrun.2 PROPERTIES ENVIRONMENT "${FABRIC_ENV};${_na_env};ISHMEM_INFO=1")
add_run(fence_order.fabric_tcp.amo_net.ishmrun.4 "^PASS: fence_order \\(4 PEs\\)$" "fabric;ishmrun"
  ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:fence_order> 300)
set_tests_properties(fence_order.fabric_tcp.amo_net.ishmrun.4 PROPERTIES
  ENVIRONMENT "${FABRIC_ENV};${_na_env};ISHMEMI_OFI_NODE_AMO_NET=1")

# ctx_quiet across 2 nodes (issue 25, tests/c/ctx_quiet.c): PE 3 stopped (SIGSTOP by its node
# peer), PE 0's quiet of the context holding a put and an AMO to it must wait, the quiet of
# another context must not. ISHMEM_PEER_TIMEOUT_S=20: a quiet that waits for every operation
# (the broken build of ISHMEM_MUTATION=ctx_quiet_global) ends the job after 20 s of no
# completion instead of 300 s.
set(_ctx_provs tcp)
if(ISHMEM_TEST_SOCKETS)
  list(APPEND _ctx_provs sockets)
endif()
foreach(prov ${_ctx_provs})
  fabric_provider_env(${prov} provider_env)
  set(t ctx_quiet.fabric_${prov}.ishmrun.4)
  add_run(${t} "^PASS: ctx_quiet \\(4 PEs\\)$" "fabric;ishmrun"
    ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:ctx_quiet>)
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "${FABRIC_ENV};${provider_env};ISHMEM_PEER_TIMEOUT_S=20")
endforeach()

# order_mut across 2 pretend nodes (issue 26, tests/c/order_mut.c): writer, target and checker
# on different paths (network put, node-local flag, the checker's own network get), 100 rounds
# per phase. tcp;ofi_rxm: every phase (amo_fence_put failed until the fence ordered a network
# AMO before a later store to a node peer, issue 27 item 1: 6-61 of 400 rounds wrong per PE;
# fence_order above is that item's own test); staged heaps (ISHMEM_OFI_STAGING=always): the heap through the mailbox, the flag of
# fence_global to a symmetric global through the network.
fabric_provider_env(tcp _om_env)
add_run(order_mut.fabric_tcp.ishmrun.4 "^PASS: order_mut \\(4 PEs\\)$" "fabric;ishmrun;order"
  ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:order_mut> 100 quiet get put_fence_amo amo_fence_put fence_global signal team_sync)
set_tests_properties(order_mut.fabric_tcp.ishmrun.4 PROPERTIES ENVIRONMENT "${FABRIC_ENV};${_om_env}")
# The same AMO and signal phases with AMOs to node peers through the provider (the routing
# kept for NIC atomics, ISHMEMI_OFI_NODE_AMO_NET=1), where only the fence orders them.
add_run(order_mut.fabric_tcp.amo_net.ishmrun.4 "^PASS: order_mut \\(4 PEs\\)$" "fabric;ishmrun;order"
  ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:order_mut> 100 put_fence_amo amo_fence_put signal)
set_tests_properties(order_mut.fabric_tcp.amo_net.ishmrun.4 PROPERTIES ENVIRONMENT "${FABRIC_ENV};${_om_env};ISHMEMI_OFI_NODE_AMO_NET=1")
fabric_provider_env(tcp_staged _om_env)
add_run(order_mut.fabric_tcp_staged.ishmrun.4 "^PASS: order_mut \\(4 PEs\\)$" "fabric;ishmrun;order"
  ${ISHMEM_RUN} --timeout 80 -n 4 $<TARGET_FILE:order_mut> 100 fence_global quiet get)
set_tests_properties(order_mut.fabric_tcp_staged.ishmrun.4 PROPERTIES ENVIRONMENT "${FABRIC_ENV};${_om_env}")

# Issue 31 (more PEs than CPUs): 2 PEs on 2 pretend nodes confined to one CPU (taskset) are one
# machine's PEs on one CPU, whatever the split: their waits must not spin (ISHMEM_INFO says how
# they wait). Before: the PEs were counted per pretend node (1 each), the waits spun 20000 polls.
find_program(TASKSET_PROGRAM taskset)
if(TASKSET_PROGRAM)
  add_run(env.oversubscribed.fabric_tcp.ishmrun.2
    "^waits: spin 0 polls before yielding \\(2 PEs of the job on this machine, 1 usable CPUs: oversubscribed\\)$"
    "fabric;ishmrun;env" ${TASKSET_PROGRAM} -c 0 ${ISHMEM_RUN} --timeout 80 -n 2 $<TARGET_FILE:setup> ISHMRUN 2)
  set_tests_properties(env.oversubscribed.fabric_tcp.ishmrun.2 PROPERTIES
    ENVIRONMENT "${FABRIC_ENV};ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm;ISHMEM_INFO=1")
  # Issue 29: more than 4 PEs per CPU (5 PEs on 2 pretend nodes confined to one CPU) wait in
  # block mode: no spinning or yielding, asleep in poll on the network's wait fd (a yielding
  # waiter stays runnable and takes the CPU from the PE it waits for: 64 PEs on 2 cores).
  # Before: "waits: spin 0 polls before yielding (5 PEs ..., 1 usable CPUs: oversubscribed)".
  add_run(env.blocking.fabric_tcp.ishmrun.5
    "^waits: block, no spinning or yielding: sleep 20-2000 us in poll on the network's wait fd \\(5 PEs of the job on this machine, 1 usable CPUs: oversubscribed more than 4x\\)$"
    "fabric;ishmrun;env" ${TASKSET_PROGRAM} -c 0 ${ISHMEM_RUN} --timeout 80 -n 5 $<TARGET_FILE:setup> ISHMRUN 5)
  set_tests_properties(env.blocking.fabric_tcp.ishmrun.5 PROPERTIES
    ENVIRONMENT "${FABRIC_ENV};ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm;ISHMEM_INFO=1")
endif()

# Issue 30, item 2: a client outside the job (net_attacker, stock libfabric, tcp;ofi_rxm on
# loopback) that knows only PE 1's pid (so its listening ports, as a port scan would find them)
# tries blind fi_read / fi_write with guessed memory keys (the old fixed 1-4) at offset 0 and
# small offsets of a job of 2 PEs on 2 pretend nodes (net_victim), and scans what it can read
# for the job's markers. Passes when every access is refused with a provider error and the job
# finds its global and heap word unchanged (scripts/net_attack.sh).
find_path(LIBFABRIC_INCLUDE_DIR rdma/fabric.h)
if(LIBFABRIC_INCLUDE_DIR)
  add_executable(net_victim c/net_victim.c)
  target_include_directories(net_victim PRIVATE c)
  target_link_libraries(net_victim PRIVATE ishmem::ishmem)
  add_executable(net_attacker c/net_attacker.c)
  target_include_directories(net_attacker PRIVATE ${LIBFABRIC_INCLUDE_DIR})
  target_link_libraries(net_attacker PRIVATE ${LIBFABRIC_LIBRARY})
  add_test(NAME security.net_keys.fabric_tcp.ishmrun.2 COMMAND ${SH_PROGRAM} ${SCRIPTS}/net_attack.sh
    ${ISHMEM_RUN} $<TARGET_FILE:net_victim> $<TARGET_FILE:net_attacker>)
  set_tests_properties(security.net_keys.fabric_tcp.ishmrun.2 PROPERTIES TIMEOUT ${TEST_TIMEOUT}
    LABELS "fabric;ishmrun;security" ENVIRONMENT "${FABRIC_ENV};ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm"
    PASS_REGULAR_EXPRESSION "PASS: net_attack" FAIL_REGULAR_EXPRESSION "FAIL: ")
else()
  add_test(NAME security.net_keys.fabric_tcp.ishmrun.2 COMMAND ${SH_PROGRAM} -c
    "echo 'skipped: rdma/fabric.h not found (Debian: libfabric-dev): the network attacker is not built'; exit 77")
  set_tests_properties(security.net_keys.fabric_tcp.ishmrun.2 PROPERTIES LABELS "fabric;security" SKIP_RETURN_CODE 77)
endif()
# The job itself addressing the loader's .got.plt of a PE of another node (GOT[3], in the data
# segment's first page but before __data_start) gets a clear error, not a provider fault.
if(LIBFABRIC_INCLUDE_DIR)
  add_test(NAME bad.got_remote.fabric_tcp.ishmrun.2 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --once --merge
    "^\\[PE 0\\] ERROR: ishmem_getmem: source 0x[0-9a-f]+ \\(8 bytes\\) is outside the program's own data \\[0x[0-9a-f]+, 0x[0-9a-f]+\\) \\(from __data_start\\), the only part of the executable's data segment that other nodes can reach: the loader's .got.plt \\[0x[0-9a-f]+, 0x[0-9a-f]+\\) is not registered with the network$"
    30 ${ISHMEM_RUN} -n 2 $<TARGET_FILE:net_victim> got)
  set_tests_properties(bad.got_remote.fabric_tcp.ishmrun.2 PROPERTIES TIMEOUT ${TEST_TIMEOUT}
    LABELS "fabric;ishmrun;negative;security" ENVIRONMENT "${FABRIC_ENV};ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm")
endif()

# Issue 27, item 7 and the minors on leaving the job across nodes (tests/c/live.c), 4 PEs on 2
# pretend nodes over tcp;ofi_rxm, under ishmrun (and OpenMPI's mpirun where present):
#   live.stop*       the first PE of the second node is stopped (SIGSTOP) for 7 s: a live PE that
#                    is silent is not dead (before: "PE 2 (another node) cannot be reached: ...;
#                    it died or exited without calling ishmem_finalize" after 5 s)
#   live.silent*     the same with ISHMEM_PEER_TIMEOUT_S=2: the job ends saying the PE was silent
#   live.kill*       the last PE is killed: the job ends saying its process ended
#   live.exit0*      PE 1 calls exit(0) (which finalizes) while the others wait in a barrier:
#                    the job ends within seconds naming PE 1 and finalize
#   live.global_exit*  PE 1 calls ishmem_global_exit(5): every PE of both nodes ends with 5
#   live.global_exit_reaped*  the same, each PE of the second node SIGKILLed the moment a PE of
#                    the first node ends (as OpenMPI's mpirun ends a job): the second node must
#                    still say why (before: PE 1 exited at once, so the line was lost whenever the
#                    launcher was quicker than the relay; CI lost it once under mpirun); at 6 PEs
#                    (3 per node) also PE 2, the caller's node-mate, waits for the relay
#   live.global_exit_linger*  6 PEs, the caller lingers 300 ms after its node was told
#                    (ISHMEMI_GLOBAL_EXIT_LINGER_MS, a test aid): its node-mates end first, and
#                    its watchdog must not call that a failure
set(_live_env "${FABRIC_ENV};ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm")
set(_live_launchers ishmrun)
if(MPIRUN_OPENMPI)
  list(APPEND _live_launchers openmpi)
endif()
foreach(l ${_live_launchers})
  if(l STREQUAL "ishmrun")
    set(cmd ${ISHMEM_RUN} --timeout 60 -n 4)
  else()
    set(cmd ${MPIRUN_OPENMPI} --allow-run-as-root --oversubscribe -np 4)
  endif()
  add_run(live.stop.fabric_tcp.${l}.4 "^PASS: live stop \\(4 PEs\\)$" "fabric;${l}"
    ${cmd} $<TARGET_FILE:live> stop 7)
  set_tests_properties(live.stop.fabric_tcp.${l}.4 PROPERTIES ENVIRONMENT "${_live_env}")
  add_test(NAME live.silent.fabric_tcp.${l}.4 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --merge --absent "FAIL"
    "ERROR: PE 2 \\(another node\\) has been silent for 2 s or more \\(ISHMEM_PEER_TIMEOUT_S=2\\)" 40
    ${cmd} $<TARGET_FILE:live> stop 20)
  set_tests_properties(live.silent.fabric_tcp.${l}.4 PROPERTIES ENVIRONMENT "${_live_env};ISHMEM_PEER_TIMEOUT_S=2")
  add_test(NAME live.kill.fabric_tcp.${l}.4 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --merge --absent "FAIL"
    "ERROR: .*PE 3 .*(died|process ended)" 15
    ${cmd} $<TARGET_FILE:live> kill)
  set_tests_properties(live.kill.fabric_tcp.${l}.4 PROPERTIES ENVIRONMENT "${_live_env}")
  add_test(NAME live.exit0.fabric_tcp.${l}.4 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --merge --absent "FAIL"
    "ERROR: PE 1 \\(pid [0-9]+\\) called ishmem_finalize \\(or exited with status 0, which finalizes\\) while this PE waits for it" 15
    ${cmd} $<TARGET_FILE:live> exit0)
  set_tests_properties(live.exit0.fabric_tcp.${l}.4 PROPERTIES ENVIRONMENT "${_live_env}")
  add_test(NAME live.global_exit.fabric_tcp.${l}.4 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --status 5 --merge
    --absent "FAIL|died|without calling ishmem_finalize"
    "PE 1 \\(another node\\) called ishmem_global_exit\\(5\\)" 15
    ${cmd} $<TARGET_FILE:live> global_exit)
  set_tests_properties(live.global_exit.fabric_tcp.${l}.4 PROPERTIES ENVIRONMENT "${_live_env}")
  add_test(NAME live.global_exit_reaped.fabric_tcp.${l}.4 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --status 5 --merge
    --absent "FAIL|died|without calling ishmem_finalize"
    "PE 1 \\(another node\\) called ishmem_global_exit\\(5\\)" 15
    ${cmd} $<TARGET_FILE:live> global_exit_reaped)
  set_tests_properties(live.global_exit_reaped.fabric_tcp.${l}.4 PROPERTIES ENVIRONMENT "${_live_env}")
  # 3 PEs per node: PE 2, the caller's node-mate, must not exit before its leader told the
  # other node either (before: it exited at once on seeing the node's word).
  if(l STREQUAL "ishmrun")
    set(cmd6 ${ISHMEM_RUN} --timeout 60 -n 6)
  else()
    set(cmd6 ${MPIRUN_OPENMPI} --allow-run-as-root --oversubscribe -np 6)
  endif()
  add_test(NAME live.global_exit_reaped.fabric_tcp.${l}.6 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --status 5 --merge
    --absent "FAIL|died|without calling ishmem_finalize"
    "PE 1 \\(another node\\) called ishmem_global_exit\\(5\\)" 20
    ${cmd6} $<TARGET_FILE:live> global_exit_reaped)
  set_tests_properties(live.global_exit_reaped.fabric_tcp.${l}.6 PROPERTIES ENVIRONMENT "${_live_env}"
    TIMEOUT ${TEST_TIMEOUT} LABELS "fabric;${l};negative")
  # The caller lingers 300 ms after its node was told (ISHMEMI_GLOBAL_EXIT_LINGER_MS, a test
  # aid: a preempted thread), so its node-mates end first: its watchdog must not call their
  # ends failures (before: `[PE 1] ERROR: PE 2 (pid p) died or exited without calling
  # ishmem_finalize`, seen once under ctest -j2 without the aid).
  add_test(NAME live.global_exit_linger.fabric_tcp.${l}.6 COMMAND ${SH_PROGRAM} ${EXPECT_FAIL} --status 5 --merge
    --absent "FAIL|died|without calling ishmem_finalize"
    "PE 1 \\(another node\\) called ishmem_global_exit\\(5\\)" 20
    ${cmd6} $<TARGET_FILE:live> global_exit)
  set_tests_properties(live.global_exit_linger.fabric_tcp.${l}.6 PROPERTIES
    ENVIRONMENT "${_live_env};ISHMEMI_GLOBAL_EXIT_LINGER_MS=300" TIMEOUT ${TEST_TIMEOUT} LABELS "fabric;${l};negative")
  set_tests_properties(live.silent.fabric_tcp.${l}.4 live.kill.fabric_tcp.${l}.4
    live.exit0.fabric_tcp.${l}.4 live.global_exit.fabric_tcp.${l}.4 live.global_exit_reaped.fabric_tcp.${l}.4 PROPERTIES TIMEOUT ${TEST_TIMEOUT}
    LABELS "fabric;${l};negative")
endforeach()

# Issue 27 (minor): libfabric's shm provider leaves nothing in /dev/shm after a clean exit (each
# PE left a 16 MiB region); run in a private /dev/shm (root, unshare; otherwise skipped).
add_test(NAME fabric.shm_files.ishmrun.2 COMMAND ${SH_PROGRAM} ${SCRIPTS}/ofi_shm_files.sh ${ISHMEM_RUN} $<TARGET_FILE:setup>)
set_tests_properties(fabric.shm_files.ishmrun.2 PROPERTIES TIMEOUT ${TEST_TIMEOUT} LABELS "fabric;ishmrun"
  SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "PASS: ofi_shm_files" FAIL_REGULAR_EXPRESSION "FAIL: ")

# Connections per PE across nodes (issue 29, docs/SCALING.md): 8 PEs on 4 pretend nodes; after
# barriers and 1 s idle, a PE that is not its node's leader holds no TCP connection, a leader
# its liveness connections plus at most the barrier's and its probe's. With
# ISHMEM_COLL_CHECK_MS=0 (no agreement checks, whose reads of every member of a long-waiting
# collective would connect the PE to them). Before: "PE 1 (not a node leader, no network
# operation made) holds 6 TCP connections; want 0 (4 nodes)" on every non-leader: every PE's
# probe thread read the leader of every other node, and ISHMEM_COLL_CHECK_MS=0 made every poll
# of a collective's wait read every member instead of never.
add_run(conns.fabric_tcp.ishmrun.8 "^PASS: conns \\(8 PEs\\)$" "fabric;ishmrun"
  ${ISHMEM_RUN} --timeout 80 -n 8 $<TARGET_FILE:conns>)
set_tests_properties(conns.fabric_tcp.ishmrun.8 PROPERTIES
  ENVIRONMENT "ISHMEM_NODE_SPLIT=4;ISHMEM_COLL_CHECK_MS=0;FI_TCP_IFACE=lo;ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm")
# The same program then checks which form the world team's 8-byte sum_reduce and fcollect
# took, by a member's connections: without ISHMEM_COLL_TREE_MIN (the default, 16: push at 8
# PEs) every PE of another node (6); with ISHMEM_COLL_TREE_MIN=8 (the tree from 8 PEs on) only
# its tree neighbours on other nodes (0 for members of 2-PE nodes). Either run fails if the
# default or the override stops taking effect.
add_run(conns_tree.fabric_tcp.ishmrun.8 "^PASS: conns \\(8 PEs\\)$" "fabric;ishmrun"
  ${ISHMEM_RUN} --timeout 80 -n 8 $<TARGET_FILE:conns>)
set_tests_properties(conns_tree.fabric_tcp.ishmrun.8 PROPERTIES
  ENVIRONMENT "ISHMEM_NODE_SPLIT=4;ISHMEM_COLL_CHECK_MS=0;ISHMEM_COLL_TREE_MIN=8;FI_TCP_IFACE=lo;ISHMEM_OFI_PROVIDER=tcp\\;ofi_rxm")
