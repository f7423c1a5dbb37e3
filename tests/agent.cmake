# SPDX-License-Identifier: Apache-2.0
# `mlprof agent` tests: a CPU workload with known function names and the local-files
# integration test (windows contiguous, one file per window per service, names present).
add_executable(agent_workload ${CMAKE_CURRENT_SOURCE_DIR}/workloads/agent_workload.c)
target_compile_options(agent_workload PRIVATE -O2 -g ${MLPROF_WARNINGS})
set_target_properties(agent_workload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

find_program(PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.agent_local
  COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_agent_local.py)
set_tests_properties(it.agent_local PROPERTIES
  LABELS "agent;integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;AGENT_WORKLOAD=$<TARGET_FILE:agent_workload>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 180 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)

# The sampling path never waits on the spool: backend down, spool file system frozen.
add_test(NAME it.agent_spool_stall
  COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_agent_spool_stall.py)
set_tests_properties(it.agent_spool_stall PROPERTIES
  LABELS "agent;integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;AGENT_WORKLOAD=$<TARGET_FILE:agent_workload>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 240 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
