# SPDX-License-Identifier: Apache-2.0
# Hostile processes (issue 19): programs under tests/hostile/ that attack the profiler
# (uprobes redirected into other libraries, oversized line tables and debug sections, forged
# section counts, huge maps), with unprofiled victims where one is involved. Needs root.
find_program(MLPROF_HOSTILE_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.hostile
  COMMAND ${MLPROF_HOSTILE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_hostile.py)
set_tests_properties(it.hostile PROPERTIES LABELS "integration;root" TIMEOUT 600
  RUN_SERIAL TRUE SKIP_RETURN_CODE 77 ENVIRONMENT
  "MLPROF=$<TARGET_FILE:mlprof>;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp;CUDA_TEST_DIR=${CMAKE_CURRENT_BINARY_DIR}/cuda;HOSTILE_BIN=${CMAKE_CURRENT_BINARY_DIR}/hostile")

# the library whose debug info test_hostile.DwarfBomb swaps for a decompression bomb
add_library(hostile_dwarf_bomb SHARED ${CMAKE_CURRENT_SOURCE_DIR}/hostile/dwarf_bomb.c)
target_compile_options(hostile_dwarf_bomb PRIVATE -O1 -g -gz=zlib ${MLPROF_WARNINGS})
target_link_options(hostile_dwarf_bomb PRIVATE -gz=zlib)
set_target_properties(hostile_dwarf_bomb PROPERTIES OUTPUT_NAME dwarfbomb
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/hostile)
