#!/usr/bin/env bash
# `vramshim watch` in a terminal (tmux) and in a pipe; the checks are in watch_test.py.
set -euo pipefail
exec /usr/bin/python3 tests/integration/watch_test.py
