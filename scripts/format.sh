#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clang-format over our C sources: `scripts/format.sh` rewrites, `--check` fails on a diff.
set -euo pipefail
cd "$(dirname "$0")/.."
# tracked files and new ones not yet added (a new file must not wait for its commit)
files=$(git ls-files --cached --others --exclude-standard 'src/*.[ch]' 'include/*.h' \
	'bpf/*.[ch]' 'tests/*.[ch]')
if [ "${1:-}" = "--check" ]; then
	clang-format --dry-run -Werror $files
else
	clang-format -i $files
fi
