# SPDX-License-Identifier: Apache-2.0
# Memory-growth profile (on by default in mlprof record): a workload that keeps anonymous
# memory in one known chain and churns it (mmap, write, munmap) in another, built like
# production ML binaries (-O2, no frame pointers); it.record_memory checks the in-use and
# brought-in views against the bytes the program reports, at the end of the recording and
# at process exit, a Python program's growth, and --no-memory.
add_executable(mem_workload ${CMAKE_CURRENT_SOURCE_DIR}/workloads/mem_workload.c)
target_compile_options(mem_workload PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fomit-frame-pointer
  -fno-inline-functions-called-once -fno-sanitize=all)
target_link_options(mem_workload PRIVATE -fno-sanitize=all)
set_target_properties(mem_workload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

# Same environment as workloads.cmake's IT_ENV (that fragment may be included after this one).
find_program(MLPROF_MEMORY_PYTHON3 NAMES python3 REQUIRED)
set(MEMORY_IT_ENV MLPROF=$<TARGET_FILE:mlprof> WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads
  TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR} TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp)
add_test(NAME it.record_memory
  COMMAND ${MLPROF_MEMORY_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_memory.py)
set_tests_properties(it.record_memory PROPERTIES LABELS "integration;root"
  ENVIRONMENT "${MEMORY_IT_ENV}" TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
