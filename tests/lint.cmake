# SPDX-License-Identifier: Apache-2.0
# The source layout's rules (src/*/README.md "May include:", no include circles).
find_program(PYTHON3 NAMES python3 REQUIRED)
add_test(NAME lint.layers COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/lint/test_layers.py)
set_tests_properties(lint.layers PROPERTIES LABELS "lint" TIMEOUT 60)
