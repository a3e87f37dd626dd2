#!/usr/bin/env bash
# `vramshim exporter` scraped by a real Prometheus server (Debian's prometheus, tools/bootstrap.sh);
# the checks are in exporter_test.py.
set -euo pipefail
exec /usr/bin/python3 tests/integration/exporter_test.py
