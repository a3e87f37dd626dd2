#!/usr/bin/env bash
# The HTML page's script under Node (Debian's nodejs package): its layout and formatting functions.
set -euo pipefail
exec node tests/analyzer/page_js_test.js analyzer/render/assets/page.js
