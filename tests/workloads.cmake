# SPDX-License-Identifier: Apache-2.0
# Workloads for the integration tests, built like production ML binaries: -O2 without
# frame pointers. wl_pie (PIE + shared library) and wl_nopie (non-PIE, library linked in).
set(WL_FLAGS -O2 -g0 -fomit-frame-pointer -fno-inline-functions-called-once)
add_library(wl SHARED ${CMAKE_CURRENT_SOURCE_DIR}/workloads/wl_lib.c)
target_compile_options(wl PRIVATE ${WL_FLAGS})
set_target_properties(wl PROPERTIES OUTPUT_NAME wl LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

add_executable(wl_pie ${CMAKE_CURRENT_SOURCE_DIR}/workloads/wl_main.c)
target_compile_options(wl_pie PRIVATE ${WL_FLAGS} -fPIE)
target_link_options(wl_pie PRIVATE -pie)
target_link_libraries(wl_pie PRIVATE wl pthread)
set_target_properties(wl_pie PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads
  BUILD_RPATH ${CMAKE_CURRENT_BINARY_DIR}/workloads)

add_executable(wl_nopie ${CMAKE_CURRENT_SOURCE_DIR}/workloads/wl_main.c
  ${CMAKE_CURRENT_SOURCE_DIR}/workloads/wl_lib.c)
target_compile_options(wl_nopie PRIVATE ${WL_FLAGS} -fno-PIE)
target_link_options(wl_nopie PRIVATE -no-pie)
target_link_libraries(wl_nopie PRIVATE pthread)
set_target_properties(wl_nopie PROPERTIES POSITION_INDEPENDENT_CODE OFF
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

# Integration tests: the real mlprof binary, as root, with real BPF.
find_program(PYTHON3 NAMES python3 REQUIRED)
set(IT_ENV MLPROF=$<TARGET_FILE:mlprof> WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads
  TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR} TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp)
foreach(t record_chains record_errors record_python)
  add_test(NAME it.${t} COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_${t}.py)
  set_tests_properties(it.${t} PROPERTIES LABELS "integration;root" ENVIRONMENT "${IT_ENV}"
    TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endforeach()
