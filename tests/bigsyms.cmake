# SPDX-License-Identifier: Apache-2.0
# A library too large for small symbol caches (it.record_bigsyms), shaped like PyTorch's
# libtorch_cpu.so: libbigsyms.so with 520,000 exported functions, 90-160 byte mangled C++
# names (a .strtab and a .dynstr of ~66 MB each), CFI for every function, .eh_frame_hdr, and
# a hot chain without frame pointers in the middle of its address range. Generated at build
# time (tests/workloads/bigsyms_gen.py), assembled in parts (in parallel under -j), linked
# into WL_DIR; bigsyms_main (-O2, no frame pointers) links it and calls its entry point.
find_program(BIGSYMS_PYTHON3 NAMES python3 REQUIRED)
set(BIGSYMS_GEN ${CMAKE_CURRENT_SOURCE_DIR}/workloads/bigsyms_gen.py)
set(BIGSYMS_DIR ${CMAKE_CURRENT_BINARY_DIR}/bigsyms)
set(BIGSYMS_LIB ${CMAKE_CURRENT_BINARY_DIR}/workloads/libbigsyms.so)
set(BIGSYMS_PARTS 4)

set(BIGSYMS_ASM)
set(BIGSYMS_OBJ)
math(EXPR BIGSYMS_LAST "${BIGSYMS_PARTS} - 1")
foreach(bigsyms_p RANGE ${BIGSYMS_LAST})
  list(APPEND BIGSYMS_ASM ${BIGSYMS_DIR}/bigsyms_${bigsyms_p}.s)
  list(APPEND BIGSYMS_OBJ ${BIGSYMS_DIR}/bigsyms_${bigsyms_p}.o)
endforeach()
add_custom_command(
  OUTPUT ${BIGSYMS_ASM}
  COMMAND ${BIGSYMS_PYTHON3} ${BIGSYMS_GEN} ${BIGSYMS_DIR} --parts ${BIGSYMS_PARTS}
  DEPENDS ${BIGSYMS_GEN}
  COMMENT "Generating libbigsyms.so's assembly (520,000 functions)"
  VERBATIM)
# One command per part: make -j assembles them side by side (~530 MB of memory each).
foreach(bigsyms_p RANGE ${BIGSYMS_LAST})
  add_custom_command(
    OUTPUT ${BIGSYMS_DIR}/bigsyms_${bigsyms_p}.o
    COMMAND ${CMAKE_C_COMPILER} -c -o ${BIGSYMS_DIR}/bigsyms_${bigsyms_p}.o
            ${BIGSYMS_DIR}/bigsyms_${bigsyms_p}.s
    DEPENDS ${BIGSYMS_DIR}/bigsyms_${bigsyms_p}.s
    COMMENT "Assembling libbigsyms.so part ${bigsyms_p}"
    VERBATIM)
endforeach()
# The link keeps the parts in address order; gcc and clang both pass --eh-frame-hdr, named
# here anyway since the test depends on it. No libc: the library calls nothing.
add_custom_command(
  OUTPUT ${BIGSYMS_LIB}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/workloads
  COMMAND ${CMAKE_C_COMPILER} -shared -nostdlib -Wl,--eh-frame-hdr -Wl,--build-id=sha1
          -Wl,-z,noexecstack -Wl,-soname,libbigsyms.so -o ${BIGSYMS_LIB} ${BIGSYMS_OBJ}
  DEPENDS ${BIGSYMS_OBJ}
  COMMENT "Linking libbigsyms.so"
  VERBATIM)
add_custom_target(bigsyms_lib ALL DEPENDS ${BIGSYMS_LIB})

add_executable(bigsyms_main ${CMAKE_CURRENT_SOURCE_DIR}/workloads/bigsyms_main.c)
# Never sanitized, like the other production-shaped workloads' hot code.
target_compile_options(bigsyms_main PRIVATE ${MLPROF_WARNINGS} -O2 -g0 -fomit-frame-pointer
  -fno-sanitize=all)
target_link_options(bigsyms_main PRIVATE -fno-sanitize=all)
target_link_libraries(bigsyms_main PRIVATE ${BIGSYMS_LIB})
add_dependencies(bigsyms_main bigsyms_lib)
set_target_properties(bigsyms_main PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/workloads
  BUILD_RPATH ${CMAKE_CURRENT_BINARY_DIR}/workloads)

add_test(NAME it.record_bigsyms
  COMMAND ${BIGSYMS_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_bigsyms.py)
set_tests_properties(it.record_bigsyms PROPERTIES LABELS "integration;root"
  ENVIRONMENT "MLPROF=$<TARGET_FILE:mlprof>;WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp"
  TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)

# unit.elf scans it whole and checks the scan gives the pages it read back.
if(TARGET test_elf)
  add_dependencies(test_elf bigsyms_lib)
  target_compile_definitions(test_elf PRIVATE BIGSYMS_LIB="${BIGSYMS_LIB}")
endif()
