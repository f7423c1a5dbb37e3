# SPDX-License-Identifier: Apache-2.0
# `mlprof diff` end to end, no root: pprof files from an independent writer in the test and
# from mlprof's encoder (mkprof, see pprof.cmake); text report, CI gate exit codes, errors,
# the differential flame graph. The unit tests of the pure parts are unit/test_diff.c.
find_program(PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.diff
  COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_diff.py)
set_tests_properties(it.diff PROPERTIES
  LABELS "integration"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;MKPROF=$<TARGET_FILE:mkprof>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 120)
