# SPDX-License-Identifier: Apache-2.0
# Off-CPU profiles: a workload whose threads block in known chains (nanosleep, a pipe read,
# a contended mutex) and time their own off-CPU intervals, built like production ML binaries
# (-O2, no frame pointers); it.record_offcpu (mlprof record --off-cpu) and it.agent_offcpu
# (mlprof agent --off-cpu against a real Pyroscope; exit 77 = skipped without a server binary).
add_executable(offcpu_workload ${CMAKE_CURRENT_SOURCE_DIR}/workloads/offcpu_workload.c)
target_compile_options(offcpu_workload PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fomit-frame-pointer
  -fno-inline-functions-called-once -fno-sanitize=all)
target_link_options(offcpu_workload PRIVATE -fno-sanitize=all)
target_link_libraries(offcpu_workload PRIVATE pthread)
set_target_properties(offcpu_workload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

# Same environment as workloads.cmake's IT_ENV (that fragment may be included after this one).
find_program(MLPROF_OFFCPU_PYTHON3 NAMES python3 REQUIRED)
set(OFFCPU_IT_ENV MLPROF=$<TARGET_FILE:mlprof> WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads
  TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR} TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp
  PYROSCOPE_SH=${CMAKE_SOURCE_DIR}/scripts/pyroscope.sh)
foreach(t record_offcpu agent_offcpu)
  add_test(NAME it.${t}
    COMMAND ${MLPROF_OFFCPU_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_${t}.py)
  set_tests_properties(it.${t} PROPERTIES LABELS "integration;root"
    ENVIRONMENT "${OFFCPU_IT_ENV}" TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endforeach()
set_tests_properties(it.agent_offcpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
