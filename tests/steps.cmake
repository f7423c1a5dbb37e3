# SPDX-License-Identifier: Apache-2.0
# PyTorch training steps (mlprof record's step breakdown): it.record_steps runs
# tests/workloads/py_steps.py under PyPI torch (TORCH_PYTHON, default the bench venv
# ~/.cache/mlprof/torch-venv; SKIPPED without it) and Debian's python3-torch 1.13.
find_program(MLPROF_STEPS_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.record_steps
  COMMAND ${MLPROF_STEPS_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_steps.py)
set_tests_properties(it.record_steps PROPERTIES LABELS "integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;CUDA_TEST_DIR=${CMAKE_CURRENT_BINARY_DIR}/cuda;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 600 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
