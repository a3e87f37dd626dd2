#!/usr/bin/env bash
# The fixture reports the report-reading tests share, written into DIR: base.json; leak.json (another
# process, one leak more); oom.json (with an out-of-memory explanation); rank0..2.json (three ranks of
# one job, figures scaled by rank + 1, for merge).
# Usage: bash tests/analyzer/fixture_reports.sh DIR
set -euo pipefail
dir=$1
fixture=tests/analyzer/fixture_report_bin
"$fixture" --out "$dir/base.json"
"$fixture" --out "$dir/leak.json" --pid 4243 --extra-leak
"$fixture" --out "$dir/oom.json" --oom
for rank in 0 1 2; do
  "$fixture" --out "$dir/rank$rank.json" --pid $((100 + rank)) --rank $rank --scale $((rank + 1))
done
