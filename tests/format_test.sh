#!/usr/bin/env bash
# Every C++ file of the repository is formatted as .clang-format says (clang-format --dry-run
# -Werror). The sources are found from the checkout this test's .clang-format links to, so the test
# is tagged "external": Bazel reruns it every time instead of caching a result its inputs do not
# capture.
set -euo pipefail

style=$(readlink -f .clang-format)
root=$(dirname "$style")
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cc' '*.h' '*.c' ':!third_party')
else
  mapfile -t files < <(find . -path ./third_party -prune -o -path './bazel-*' -prune -o \
    \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) -print)
fi
if ((${#files[@]} < 100)); then
  echo "FAIL: found only ${#files[@]} C++ files under $root" >&2
  exit 1
fi
clang-format --style=file --dry-run -Werror "${files[@]}"
echo "ok: ${#files[@]} files formatted as .clang-format says"
