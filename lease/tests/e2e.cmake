# bench_conv under leases, end to end. Included at the end of the root directory (deferred from
# lease/tests/CMakeLists.txt, or by the root with include(lease/tests/e2e.cmake)).
if(NOT DEFINED CONVBENCH_LEASE_E2E_REGISTERED)
  set(CONVBENCH_LEASE_E2E_REGISTERED ON)
  if(TARGET bench_conv)
    add_test(NAME lease.bench_e2e
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/e2e_bench.py
                     --bench $<TARGET_FILE:bench_conv> --convlease $<TARGET_FILE:convlease>)
    set_tests_properties(lease.bench_e2e PROPERTIES LABELS lease TIMEOUT 300 RESOURCE_LOCK gpu)
    # Real Slurm jobs (tests/test_slurm_jobs.py starts a single-node Slurm when it is not up).
    # RESOURCE_LOCK slurm: the node is one, and the exclusivity checks need it to themselves.
    # convbench-fleet as built (lease/CMakeLists.txt copies it beside bench_conv).
    set(_slurm_test ${CMAKE_CURRENT_LIST_DIR}/test_slurm_jobs.py --bench $<TARGET_FILE:bench_conv>
                    --probe $<TARGET_FILE:lease_probe>
                    --fleet ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/convbench-fleet)
    add_test(NAME lease.slurm_jobs COMMAND ${Python3_EXECUTABLE} ${_slurm_test})
    # Needs bench_conv's SIGTERM handling (an interrupted record): fails until that is built.
    add_test(NAME lease.slurm_scancel COMMAND ${Python3_EXECUTABLE} ${_slurm_test} --only scancel)
    set_tests_properties(lease.slurm_jobs lease.slurm_scancel PROPERTIES LABELS "lease;slurm"
                         TIMEOUT 600 RESOURCE_LOCK slurm)
  else()
    message(STATUS "lease: bench_conv target absent, lease.bench_e2e not registered")
  endif()
endif()
