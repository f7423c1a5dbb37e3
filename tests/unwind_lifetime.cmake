# SPDX-License-Identifier: Apache-2.0
# unit.unwind_lifetime: copies of the unwind fixture library behind a fake /proc tree, one of
# them with FDE pointers into another's mapping, with the unwinder's table cache full.
if(TARGET test_unwind_lifetime)
  target_compile_definitions(test_unwind_lifetime PRIVATE
    UW_FIXTURE_LIB="$<TARGET_FILE:uw_fixture_lib>")
  add_dependencies(test_unwind_lifetime uw_fixture_lib)
endif()
