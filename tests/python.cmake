# SPDX-License-Identifier: Apache-2.0
# Python frames (it.record_python): the native leaf py_workload.py loads through ctypes,
# built like the other workloads (-O2, no frame pointers) into WL_DIR.
add_library(py_native SHARED ${CMAKE_CURRENT_SOURCE_DIR}/workloads/py_native.c)
# Never sanitized: a Python interpreter that is not built with ASan loads it.
target_compile_options(py_native PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fomit-frame-pointer
  -fno-sanitize=all)
target_link_options(py_native PRIVATE -fno-sanitize=all)
set_target_properties(py_native PROPERTIES OUTPUT_NAME py_native
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads)

# The test exits 77 when every case was skipped (no root, no interpreter). it.record_python
# is added by workloads.cmake, which is included after this fragment: set the property once
# the directory is processed.
cmake_language(DEFER CALL set_tests_properties it.record_python PROPERTIES SKIP_RETURN_CODE 77)
