#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clang-format over our C sources: `scripts/format.sh` rewrites, `--check` fails on a diff.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'bpf/*.[ch]' 'tests/*.[ch]')
if [ "${1:-}" = "--check" ]; then
	clang-format --dry-run -Werror $files
else
	clang-format -i $files
fi
