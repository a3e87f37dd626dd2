#!/usr/bin/env bash
# The wheel, installed into a fresh venv and used; the checks are in wheel_test.py.
set -euo pipefail
exec /usr/bin/python3 tests/packaging/wheel_test.py
