#!/usr/bin/env bash
# `vramshim flush --deep` without the shim (sys.remote_exec); the checks are in remote_flush_test.py.
set -euo pipefail
exec /usr/bin/python3 tests/integration/remote_flush_test.py
