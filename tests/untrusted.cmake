# SPDX-License-Identifier: Apache-2.0
# Files of other processes are untrusted: real processes (host and a container-like mount
# namespace) whose libraries are truncated, deleted and replaced, overmounted by a FIFO or a
# symlink escaping the root, or forge a host library's build id (libraries built by the test
# with gcc). Needs root; the deployed-capability cases run mlprof under setpriv.
find_program(MLPROF_UNTRUSTED_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.untrusted_files
  COMMAND ${MLPROF_UNTRUSTED_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_untrusted_files.py)
set_tests_properties(it.untrusted_files PROPERTIES LABELS "integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 600 SKIP_RETURN_CODE 77)
