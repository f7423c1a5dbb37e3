# SPDX-License-Identifier: Apache-2.0
# Least privilege: `mlprof record` and `mlprof agent` as the user nobody with exactly the
# capabilities README lists (setpriv), on the workloads of tests/workloads.cmake and
# tests/agent.cmake; without any one required capability, one line naming it. Needs root.
find_program(MLPROF_PRIVILEGE_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.least_privilege
  COMMAND ${MLPROF_PRIVILEGE_PYTHON3}
    ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_least_privilege.py)
set_tests_properties(it.least_privilege PROPERTIES LABELS "integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads;AGENT_WORKLOAD=$<TARGET_FILE:agent_workload>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
