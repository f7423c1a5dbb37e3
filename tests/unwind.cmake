# SPDX-License-Identifier: Apache-2.0
# Unwinder tests: the test's own call chain and a dlopen'ed fixture library are built the way
# production code is (-O2, no frame pointers), so only DWARF CFI can unwind them.

set(UW_FIXTURE_FLAGS -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -fno-inline)

# Shared library with .eh_frame_hdr (the normal case).
add_library(uw_fixture_lib SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fixtures-unwind/uw_lib.c)
target_compile_options(uw_fixture_lib PRIVATE ${MLPROF_WARNINGS} ${UW_FIXTURE_FLAGS})
set_target_properties(uw_fixture_lib PROPERTIES OUTPUT_NAME uwfix
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fixtures-unwind)

# Same code linked without .eh_frame_hdr / PT_GNU_EH_FRAME: the unwinder must index .eh_frame.
add_library(uw_fixture_nohdr SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fixtures-unwind/uw_lib.c)
target_compile_options(uw_fixture_nohdr PRIVATE ${MLPROF_WARNINGS} ${UW_FIXTURE_FLAGS})
target_link_options(uw_fixture_nohdr PRIVATE -Wl,--no-eh-frame-hdr)
set_target_properties(uw_fixture_nohdr PROPERTIES OUTPUT_NAME uwfix_nohdr
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fixtures-unwind)

# Same code with no .eh_frame at all, only .debug_frame (-g without unwind tables): the
# unwinder must translate .debug_frame. test_unwind checks the library really has that shape.
add_library(uw_fixture_dbgframe SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fixtures-unwind/uw_lib.c)
target_compile_options(uw_fixture_dbgframe PRIVATE ${MLPROF_WARNINGS} ${UW_FIXTURE_FLAGS}
  -fno-asynchronous-unwind-tables -fno-unwind-tables)
set_target_properties(uw_fixture_dbgframe PROPERTIES OUTPUT_NAME uwfix_dbgframe
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fixtures-unwind)

if(TARGET test_unwind)
  # The test's call chain (leaf..main) is compiled like release code; -rdynamic lets
  # dladdr() name the executable's own functions.
  target_compile_options(test_unwind PRIVATE ${UW_FIXTURE_FLAGS})
  target_link_options(test_unwind PRIVATE -rdynamic)
  target_link_libraries(test_unwind PRIVATE dl)
  target_compile_definitions(test_unwind PRIVATE
    UW_FIXTURE_LIB="$<TARGET_FILE:uw_fixture_lib>"
    UW_FIXTURE_NOHDR="$<TARGET_FILE:uw_fixture_nohdr>"
    UW_FIXTURE_DBGFRAME="$<TARGET_FILE:uw_fixture_dbgframe>")
  add_dependencies(test_unwind uw_fixture_lib uw_fixture_nohdr uw_fixture_dbgframe)
endif()

if(TARGET test_proc)
  # test_proc dlopens the fixture library to check that a lookup miss re-reads the maps.
  add_dependencies(test_proc uw_fixture_lib)
  target_link_libraries(test_proc PRIVATE dl)
endif()

if(TARGET test_unwind_async)
  # Asynchronous (SIGPROF) snapshots of release-style code: only DWARF CFI unwinds it.
  target_compile_options(test_unwind_async PRIVATE -O2 -g -fomit-frame-pointer)
  target_link_options(test_unwind_async PRIVATE -rdynamic)
  target_link_libraries(test_unwind_async PRIVATE dl)
endif()
