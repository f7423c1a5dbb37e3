# SPDX-License-Identifier: Apache-2.0
# CPython line-table port: unit.pyline exits 77 (skipped) when no CPython 3.10-3.14 exists.
set_tests_properties(unit.pyline PROPERTIES SKIP_RETURN_CODE 77)
