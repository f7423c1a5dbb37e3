# SPDX-License-Identifier: Apache-2.0
# Go programs for unit.gopclntab and it.record_go, built at build time with the Go toolchain
# (stdlib only, no network): spin_full (symbols + DWARF), spin_stripped (-s -w: only
# .gopclntab and frame pointers) and spin_cgo (external linker, stripped: C start-up code
# before Go's text); nocfi_workload, C without unwind tables. Without go the Go cases skip.
find_program(GO_EXE NAMES go PATHS /usr/local/go/bin /usr/local/bin)
set(GO_FIXTURE_DIR ${CMAKE_CURRENT_BINARY_DIR}/go)
set(GO_SRC ${CMAKE_CURRENT_SOURCE_DIR}/go)
if(GO_EXE)
  set(GO_ENV GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off GOCACHE=${GO_FIXTURE_DIR}/cache
    GOPATH=${GO_FIXTURE_DIR}/gopath)
  add_custom_command(
    OUTPUT ${GO_FIXTURE_DIR}/spin_full ${GO_FIXTURE_DIR}/spin_stripped ${GO_FIXTURE_DIR}/spin_cgo
    COMMAND ${CMAKE_COMMAND} -E env ${GO_ENV} CGO_ENABLED=0
            ${GO_EXE} build -o ${GO_FIXTURE_DIR}/spin_full .
    COMMAND ${CMAKE_COMMAND} -E env ${GO_ENV} CGO_ENABLED=0
            ${GO_EXE} build "-ldflags=-s -w" -o ${GO_FIXTURE_DIR}/spin_stripped .
    COMMAND ${CMAKE_COMMAND} -E env ${GO_ENV} CGO_ENABLED=1 CC=${CMAKE_C_COMPILER}
            ${GO_EXE} build "-ldflags=-s -w -linkmode=external" -o ${GO_FIXTURE_DIR}/spin_cgo .
    WORKING_DIRECTORY ${GO_SRC}
    DEPENDS ${GO_SRC}/spin.go ${GO_SRC}/go.mod
    COMMENT "Building Go test programs"
    VERBATIM)
  add_custom_target(go_fixtures ALL DEPENDS ${GO_FIXTURE_DIR}/spin_full
    ${GO_FIXTURE_DIR}/spin_stripped ${GO_FIXTURE_DIR}/spin_cgo)
  if(TARGET test_gopclntab)
    add_dependencies(test_gopclntab go_fixtures)
  endif()
endif()
if(TARGET test_gopclntab)
  target_compile_definitions(test_gopclntab PRIVATE GO_FIXTURE_DIR="${GO_FIXTURE_DIR}")
  set_tests_properties(unit.gopclntab PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The same fallback for C: code without unwind tables, with frame pointers (no go needed).
add_executable(nocfi_workload ${CMAKE_CURRENT_SOURCE_DIR}/workloads/nocfi.c)
target_compile_options(nocfi_workload PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fno-omit-frame-pointer
  -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-sanitize=all)
target_link_options(nocfi_workload PRIVATE -fno-sanitize=all)
set_target_properties(nocfi_workload PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${GO_FIXTURE_DIR})

# A kernel without CFI or frame pointer that takes ~29 KiB of stack (OpenBLAS's GEMM shape).
add_executable(bigframe ${CMAKE_CURRENT_SOURCE_DIR}/workloads/bigframe.c)
target_compile_options(bigframe PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fno-sanitize=all)
target_link_options(bigframe PRIVATE -fno-sanitize=all)
set_target_properties(bigframe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${GO_FIXTURE_DIR})

find_program(GO_IT_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.record_go
  COMMAND ${GO_IT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_go.py)
set_tests_properties(it.record_go PROPERTIES LABELS "integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;GO_FIXTURE_DIR=${GO_FIXTURE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
