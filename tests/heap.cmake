# SPDX-License-Identifier: Apache-2.0
# Heap profile by allocation site (mlprof record --heap): a workload whose kept blocks
# reuse heap pages that temporaries faulted in, one that frees everything it allocates
# (malloc, calloc, realloc, posix_memalign, aligned_alloc), and a Python program whose list
# keeps growing while a buffer is built and dropped each step; it.record_heap checks the
# in-use and allocated views against the bytes the programs report, with uprobe sessions
# and with the entry+return and per-probe fallbacks.
add_executable(heap_workload ${CMAKE_CURRENT_SOURCE_DIR}/workloads/heap_workload.c)
target_compile_options(heap_workload PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fomit-frame-pointer
  -fno-inline-functions-called-once -fno-sanitize=all)
target_link_options(heap_workload PRIVATE -fno-sanitize=all)
set_target_properties(heap_workload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

find_program(MLPROF_HEAP_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.record_heap
  COMMAND ${MLPROF_HEAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_heap.py)
set_tests_properties(it.record_heap PROPERTIES LABELS "integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
