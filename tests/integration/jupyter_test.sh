#!/usr/bin/env bash
# `vramshim jupyter install` and its kernel under jupyter_client; the checks are in jupyter_test.py.
set -euo pipefail
exec /usr/bin/python3 tests/integration/jupyter_test.py
