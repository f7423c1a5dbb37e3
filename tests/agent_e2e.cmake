# SPDX-License-Identifier: Apache-2.0
# `mlprof agent` end-to-end acceptance against a real Pyroscope (scripts/pyroscope.sh) and
# the fault-injection server: labels, values, restarts, retries, spool, tenancy, shutdown.
# Skipped (exit 77) when not root or when no Pyroscope binary is cached.
find_program(MLPROF_E2E_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.agent_pyroscope
  COMMAND ${MLPROF_E2E_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_agent_pyroscope.py)
set_tests_properties(it.agent_pyroscope PROPERTIES
  LABELS "integration;root;pyroscope"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;AGENT_WORKLOAD=$<TARGET_FILE:agent_workload>;PYROSCOPE_SH=${CMAKE_SOURCE_DIR}/scripts/pyroscope.sh;FAULT_SERVER=${CMAKE_CURRENT_SOURCE_DIR}/integration/fault_server.py;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 420 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
