# SPDX-License-Identifier: Apache-2.0
# Rust program for it.record_rust, built at build time with rustc (no crates, no network):
# rust_v0 (-C symbol-mangling-version=v0, stable since Rust 1.59) and rust_legacy (rustc's
# default mangling, legacy on stable). rust_v0 is linked by the toolchain's default linker
# (rust-lld since rustc 1.90: read-only segment first, text at an offset that is not
# page-aligned), rust_legacy by GNU ld as Debian's rustc does. Without rustc the test exits
# 77 (skipped).
find_program(RUSTC_EXE NAMES rustc PATHS $ENV{HOME}/.cargo/bin /root/.cargo/bin)
set(RUST_DIR ${CMAKE_CURRENT_BINARY_DIR}/rust)
set(RUST_SRC ${CMAKE_CURRENT_SOURCE_DIR}/rust/rust_chains.rs)
if(RUSTC_EXE)
  add_custom_command(
    OUTPUT ${RUST_DIR}/rust_v0 ${RUST_DIR}/rust_legacy
    COMMAND ${CMAKE_COMMAND} -E make_directory ${RUST_DIR}
    COMMAND ${CMAKE_COMMAND} -E env --unset=MAKEFLAGS --unset=MFLAGS
            ${RUSTC_EXE} -C opt-level=2 -C symbol-mangling-version=v0
            -o ${RUST_DIR}/rust_v0 ${RUST_SRC}
    COMMAND ${CMAKE_COMMAND} -E env --unset=MAKEFLAGS --unset=MFLAGS
            ${RUSTC_EXE} -C opt-level=2 -C link-arg=-fuse-ld=bfd -o ${RUST_DIR}/rust_legacy
            ${RUST_SRC}
    DEPENDS ${RUST_SRC}
    COMMENT "Building the Rust test program"
    VERBATIM)
  add_custom_target(rust_fixtures ALL DEPENDS ${RUST_DIR}/rust_v0 ${RUST_DIR}/rust_legacy)
endif()

find_program(RUST_IT_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.record_rust
  COMMAND ${RUST_IT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_rust.py)
set_tests_properties(it.record_rust PROPERTIES LABELS "integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;RUST_DIR=${RUST_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
