#!/bin/sh
# Bazel's workspace status (--workspace_status_command in .bazelrc): the commit the build comes
# from, for `vramshim version`; "-modified" when the work tree differs from it, "unknown" outside a
# git checkout.
commit=$(git rev-parse HEAD 2>/dev/null) || commit=unknown
if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
  commit="$commit-modified"
fi
echo "STABLE_GIT_COMMIT $commit"
