#!/usr/bin/env bash
# The Python package's discovery of its own socket; the checks are in python_socket_directory_test.py.
set -euo pipefail
exec /usr/bin/python3 tests/control/python_socket_directory_test.py
