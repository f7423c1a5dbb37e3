# SPDX-License-Identifier: Apache-2.0
# Python frames in real-world hosts: a C program embedding libpython (py_embed) and a
# PyTorch training loop (skipped, exit 77, where torch cannot be imported).
find_program(PYTHON3 NAMES python3 REQUIRED)
set(PY_IT_ENV MLPROF=$<TARGET_FILE:mlprof> WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads
  TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR} TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp)

pkg_check_modules(PYEMBED IMPORTED_TARGET python3-embed)
if(PYEMBED_FOUND)
  # Built like the other workloads (-O2, no frame pointers, never sanitized); libpython as
  # the system ships it.
  add_executable(py_embed ${CMAKE_CURRENT_SOURCE_DIR}/workloads/py_embed.c)
  target_compile_options(py_embed PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fomit-frame-pointer
    -fno-sanitize=all)
  target_link_options(py_embed PRIVATE -fno-sanitize=all)
  target_link_libraries(py_embed PRIVATE PkgConfig::PYEMBED)
  set_target_properties(py_embed PROPERTIES RUNTIME_OUTPUT_DIRECTORY
    ${CMAKE_CURRENT_BINARY_DIR}/workloads)
  # it.python_code_reuse: code objects freed and remade at one address keep their own names.
  foreach(t python_embed:PythonEmbed python_code_reuse:PythonCodeReuse)
    string(REPLACE ":" ";" t ${t})
    list(GET t 0 name)
    list(GET t 1 cls)
    add_test(NAME it.${name} COMMAND ${PYTHON3}
      ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_python_embed.py ${cls})
    set_tests_properties(it.${name} PROPERTIES LABELS "integration;root"
      ENVIRONMENT "${PY_IT_ENV}" TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
  endforeach()
else()
  message(STATUS "python3-embed not found (pkg-config): py_embed and it.python_embed not built")
endif()

add_test(NAME it.python_torch COMMAND ${PYTHON3}
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_python_torch.py)
set_tests_properties(it.python_torch PROPERTIES LABELS "integration;root"
  ENVIRONMENT "${PY_IT_ENV}" TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
