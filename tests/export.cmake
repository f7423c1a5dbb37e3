# SPDX-License-Identifier: Apache-2.0
# Exporter test fixtures: the C driver that encodes known profiles and delivers them, and
# the integration test against a real Pyroscope (label "pyroscope"; skipped, exit 77, when
# no Pyroscope binary is cached: build one with scripts/pyroscope.sh build).
add_executable(export_driver ${CMAKE_SOURCE_DIR}/tests/tools/export_driver.c)
target_compile_options(export_driver PRIVATE ${MLPROF_WARNINGS})
target_link_libraries(export_driver PRIVATE mlprof_core)

find_program(MLPROF_PYTHON3 NAMES python3 PATHS /usr/bin)
if(MLPROF_PYTHON3)
  add_test(NAME integration.pyroscope_push
    COMMAND ${MLPROF_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/integration/test_export_pyroscope.py
            --driver $<TARGET_FILE:export_driver>
            --script ${CMAKE_SOURCE_DIR}/scripts/pyroscope.sh)
  set_tests_properties(integration.pyroscope_push PROPERTIES
    LABELS "pyroscope;integration" TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
