# bench_conv under leases, end to end. Included at the end of the root directory (deferred from
# lease/tests/CMakeLists.txt, or by the root with include(lease/tests/e2e.cmake)).
if(NOT DEFINED CONVBENCH_LEASE_E2E_REGISTERED)
  set(CONVBENCH_LEASE_E2E_REGISTERED ON)
  if(TARGET bench_conv)
    add_test(NAME lease.bench_e2e
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/e2e_bench.py
                     --bench $<TARGET_FILE:bench_conv> --convlease $<TARGET_FILE:convlease>)
    set_tests_properties(lease.bench_e2e PROPERTIES LABELS lease TIMEOUT 300 RESOURCE_LOCK gpu)
  else()
    message(STATUS "lease: bench_conv target absent, lease.bench_e2e not registered")
  endif()
endif()
