# SPDX-License-Identifier: Apache-2.0
# Source lines from DWARF and debug files from debuginfod. Fixtures (build tree, dwarf/):
# lines_prog (-O2 -g, no frame pointers), lines_stripped (strip --strip-all) with its debug
# file in debugroot/.build-id/ (unit.dwarf_lines) and alone in debugsrv/ (what a debuginfod
# server serves in it.debuginfod).
find_program(DW_OBJCOPY NAMES objcopy REQUIRED)
find_program(DW_STRIP NAMES strip REQUIRED)
find_program(DW_NM NAMES nm REQUIRED)
find_program(DW_PYTHON3 NAMES python3 REQUIRED)
find_program(DEBUGINFOD_EXE NAMES debuginfod PATHS /usr/bin /usr/sbin)
set(DW_SRC ${CMAKE_CURRENT_SOURCE_DIR}/dwarf/lines_prog.c)
set(DW_DIR ${CMAKE_CURRENT_BINARY_DIR}/dwarf)
file(MAKE_DIRECTORY ${DW_DIR})
add_custom_command(
  OUTPUT ${DW_DIR}/stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${DW_DIR}/debugsrv ${DW_DIR}/debugroot
  COMMAND ${CMAKE_COMMAND} -E make_directory ${DW_DIR}/debugsrv
  COMMAND ${CMAKE_C_COMPILER} -O2 -g -fomit-frame-pointer -fno-sanitize=all
          -Wl,--build-id=sha1 -o ${DW_DIR}/lines_prog ${DW_SRC}
  COMMAND ${DW_NM} -S --defined-only ${DW_DIR}/lines_prog > ${DW_DIR}/lines_prog.nm
  COMMAND ${DW_STRIP} --strip-all -o ${DW_DIR}/lines_stripped ${DW_DIR}/lines_prog
  COMMAND ${DW_OBJCOPY} --only-keep-debug ${DW_DIR}/lines_prog
          ${DW_DIR}/debugsrv/lines_prog.debug
  COMMAND sh -c "id=$(readelf -n lines_prog | sed -n 's/.*Build ID: *//p'); mkdir -p debugroot/.build-id/$(echo $id | cut -c1-2) && cp debugsrv/lines_prog.debug debugroot/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug && echo $id > lines_prog.buildid"
  COMMAND ${CMAKE_COMMAND} -E touch ${DW_DIR}/stamp
  WORKING_DIRECTORY ${DW_DIR}
  DEPENDS ${DW_SRC}
  COMMENT "Building the source-line test program"
  VERBATIM)
add_custom_target(dwarf_fixtures ALL DEPENDS ${DW_DIR}/stamp)
if(TARGET test_dwarf_lines)
  add_dependencies(test_dwarf_lines dwarf_fixtures)
  target_compile_definitions(test_dwarf_lines PRIVATE DW_DIR="${DW_DIR}"
    DW_SRC="${DW_SRC}")
endif()

set(DW_IT_ENV MLPROF=$<TARGET_FILE:mlprof> DW_DIR=${DW_DIR} TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR}
  TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp DEBUGINFOD_EXE=${DEBUGINFOD_EXE})
foreach(t record_lines debuginfod)
  add_test(NAME it.${t}
    COMMAND ${DW_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_${t}.py)
  set_tests_properties(it.${t} PROPERTIES LABELS "integration;root" ENVIRONMENT "${DW_IT_ENV}"
    TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endforeach()
