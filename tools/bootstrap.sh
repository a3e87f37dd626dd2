#!/usr/bin/env bash
# Installs, as root on a fresh Debian 12 machine, every package the build and the tests use.
# Skips what is already installed; safe to run any number of times.
set -euo pipefail

packages=(
  # build
  bazel-bootstrap bazel-platforms bazel-rules-java
  g++ clang-format
  # shim
  libunwind-dev
  # analyzer
  libdw-dev libelf-dev zlib1g-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libncurses-dev
  # analyzer: export --format pprof (protoc, libprotobuf, pprof's profile.proto) and its test
  libprotobuf-dev protobuf-compiler golang-github-google-pprof-dev golang-go
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang libclang-rt-14-dev
  python3 util-linux procps chromium nodejs
  prometheus tmux
  # the man page and the shell completions (tests/docs)
  groff-base man-db bash-completion zsh
  # tools/stage-gpu.sh and packaging/ (RPATH of the bundled libraries) and the shell checks
  patchelf shellcheck
  # tests/packaging: the wheel installed into a fresh venv; the kernelspec's kernel started
  python3-venv python3-jupyter-client python3-ipykernel
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "bootstrap: all ${#packages[@]} packages present"
fi
