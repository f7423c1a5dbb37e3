# SPDX-License-Identifier: Apache-2.0
# CLI and agent behaviour a new user or an SRE meets first: README against --help, record
# and agent error paths, the spool per destination, --ml-only messages, thread names.
find_program(PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.cli_docs
  COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_cli_docs.py)
set_tests_properties(it.cli_docs PROPERTIES LABELS "integration"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 60 SKIP_RETURN_CODE 77)
add_test(NAME it.agent_cli
  COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_agent_cli.py)
set_tests_properties(it.agent_cli PROPERTIES LABELS "agent;integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;AGENT_WORKLOAD=$<TARGET_FILE:agent_workload>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 180 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
