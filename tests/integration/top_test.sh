#!/usr/bin/env bash
# `vramshim top` in a terminal (tmux) and without one; the checks are in top_test.py.
set -euo pipefail
exec /usr/bin/python3 tests/integration/top_test.py
