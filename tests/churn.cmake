# SPDX-License-Identifier: Apache-2.0
# Churn soak of the agent: a fork/exec and thread storm with pid reuse (churn at pid P, then
# churn_b at the same P through clone3 set_tid), the agent's caches bounded small. CI runs
# 45 s of storm; bench/churn.sh runs the same test for minutes and prints the RSS trend.
add_executable(churn ${CMAKE_CURRENT_SOURCE_DIR}/workloads/churn.c)
target_compile_options(churn PRIVATE -O2 -g ${MLPROF_WARNINGS})
target_link_libraries(churn PRIVATE pthread)
# one source, two binaries of identical layout differing in the hot function's name
foreach(x a b)
  add_executable(churn_${x} ${CMAKE_CURRENT_SOURCE_DIR}/workloads/churn_child.c)
  target_compile_options(churn_${x} PRIVATE -O2 -g ${MLPROF_WARNINGS})
  target_compile_definitions(churn_${x} PRIVATE CHURN_WORK=churn_${x}_work)
endforeach()
set_target_properties(churn churn_a churn_b PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

find_program(MLPROF_CHURN_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.churn
  COMMAND ${MLPROF_CHURN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_churn.py)
set_tests_properties(it.churn PROPERTIES LABELS "agent;integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;CHURN=$<TARGET_FILE:churn>;CHURN_A=$<TARGET_FILE:churn_a>;CHURN_B=$<TARGET_FILE:churn_b>;TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 180 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
