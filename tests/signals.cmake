# SPDX-License-Identifier: Apache-2.0
# Signals: the agent survives SIGPIPE from connections its peers reset (an HTTPS backend,
# /metrics clients) and from a stderr whose reader went away; `record -- COMMAND` does not
# hand its own SIGPIPE disposition to COMMAND. Needs root (BPF) and openssl.
find_program(MLPROF_SIGNALS_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.signals
  COMMAND ${MLPROF_SIGNALS_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_signals.py)
set_tests_properties(it.signals PROPERTIES LABELS "agent;integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 120 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
