#!/bin/sh
# CTest clang_format: every C/C++ file of the repository is as .clang-format formats it, with
# the clang-format pinned in python/requirements.lock (installed in the project's environment).
# Lists each unformatted file with clang-format's first complaint; exit 1 when there is one.
#
# usage: check_format.sh SOURCE_DIR CLANG_FORMAT
set -eu
source_dir=$1
clang_format=$2
if [ ! -x "$clang_format" ]; then
  echo "clang_format: $clang_format not found (third-party/install_deps.sh installs the pinned" \
       "one in the project's environment)" >&2
  exit 1
fi
cd "$source_dir"
# Tracked files in a checkout; without git, every C/C++ file outside build and environment folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files '*.c' '*.cpp' '*.h' '*.hpp')
else
  files=$(find . \( -name build -o -name 'build-*' -o -name .venv -o -name .git \) -prune -o \
          -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.hpp' \) -print)
fi
count=$(echo "$files" | wc -w)
# One run over all files; each complaint starts "FILE:LINE:COL: error:".
# shellcheck disable=SC2086
if out=$("$clang_format" --dry-run -Werror $files 2>&1); then
  echo "clang_format: $count files formatted"
  exit 0
fi
bad=$(echo "$out" | grep -o '^[^:]*:[0-9]*:[0-9]*: error' | cut -d: -f1 | sort -u)
if [ -z "$bad" ]; then
  echo "clang_format: $clang_format failed: $out" >&2
  exit 1
fi
for f in $bad; do
  echo "$f: not formatted (fix: $clang_format -i $f)"
done
echo "clang_format: $(echo "$bad" | wc -l) of $count files not formatted"
exit 1
