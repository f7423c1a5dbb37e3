# SPDX-License-Identifier: Apache-2.0
# pprof/output tests: mkprof writes a known profile in every format; check_pprof.py reads the
# pprof back with `go tool pprof -raw` (skipped when Go is absent) and checks the other formats.

add_executable(mkprof ${CMAKE_CURRENT_SOURCE_DIR}/tools/mkprof.c)
target_compile_options(mkprof PRIVATE ${MLPROF_WARNINGS})
target_link_libraries(mkprof PRIVATE mlprof_core)

find_program(MLPROF_PYTHON3 NAMES python3)
if(MLPROF_PYTHON3)
  add_test(NAME pprof.go_crosscheck
    COMMAND ${MLPROF_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_pprof.py
            $<TARGET_FILE:mkprof> ${CMAKE_CURRENT_BINARY_DIR}/pprof-crosscheck)
  set_tests_properties(pprof.go_crosscheck PROPERTIES
    LABELS "go" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
