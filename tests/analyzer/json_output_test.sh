#!/usr/bin/env bash
# --format json of report (every view), diff and merge (docs/cli-json.md) on the fixture's reports:
# each document parsed and checked against its documented members, against the figures the text
# view shows and against the report file; --top 0 lists every row, rows left out are counted in
# the text ("… N more …") and in the JSON ("omitted_rows"); a failing command in JSON mode leaves
# standard output empty.
set -euo pipefail

cli=analyzer/vramshim
work="${TEST_TMPDIR:-$(mktemp -d)}/json"
mkdir -p "$work"
bash tests/analyzer/fixture_reports.sh "$work"

# Derived reports: four sites whose live bytes grow steadily (a history); the same with 3 sites beyond
# the history's budget (untracked: no series); the same with level series; a history of untracked
# sites only; and 200 tiny
# sites under main, each under 1% of every figure, that the call tree leaves out (with the vendor
# library's nodes, under 1% of them all now too).
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/base.json"))
start = doc["process"]["start_time"]
doc["version"] = 2
times = [start + 1 + i for i in range(20)]
doc["history"] = {"budget_bytes": 8 << 20, "ticks": 20, "ticks_per_slot": 1, "untracked_sites": 0,
                  "peak": {"time": times[-1], "in_use_bytes": 1 << 20}, "slot_times": times,
                  "sites": [{"site": s, "at_peak": 0,
                             "points": [[i, ((s + 1) << 20) * (i + 1), ((s + 1) << 20) * (i + 1)]
                                        for i in range(20)]} for s in range(4)]}
json.dump(doc, open(work + "/growth.json", "w"))
doc["history"]["untracked_sites"] = 3
json.dump(doc, open(work + "/some_untracked.json", "w"))
for series in doc["history"]["sites"]:
    series["points"] = series["points"][:1]
json.dump(doc, open(work + "/level_untracked.json", "w"))
doc["history"]["untracked_sites"] = len(doc["sites"])
doc["history"]["sites"] = []
doc["history"]["budget_bytes"] = 64 << 10
json.dump(doc, open(work + "/untracked.json", "w"))

doc = json.load(open(work + "/base.json"))
main = doc["stacks"][0]["frames"][-1]  # the outermost frame of every stack: main
for n in range(200):
    frame, stack = len(doc["frames"]), len(doc["stacks"])
    doc["frames"].append({"id": frame, "module": -1, "offset": 4096 + n, "function": "tiny_%03d" % n})
    doc["stacks"].append({"id": stack, "frames": [frame, main]})
    doc["sites"].append({"stack": stack, "kind": "device", "live_bytes": 512, "live_count": 1,
                         "total_bytes": 512, "total_count": 1, "peak_bytes": 512, "bytes_at_peak": 512})
json.dump(doc, open(work + "/tiny.json", "w"))
PY

failures=0
run() {  # NAME ARGS…: the command's standard output in $work/NAME.out, standard error in NAME.err
  local name=$1
  shift
  if ! "$cli" "$@" >"$work/$name.out" 2>"$work/$name.err"; then
    echo "FAIL: $* failed: $(cat "$work/$name.err")" >&2
    failures=$((failures + 1))
  fi
}
check() {  # what the Python on standard input asserts about the files in $work
  python3 - "$work" || failures=$((failures + 1))
}

run report_text report "$work/base.json" --top 2
run report_json report "$work/base.json" --top 2 --format json
run report_all_text report "$work/base.json" --top 0
run report_all_json report "$work/base.json" --top 0 --format json
check <<'PY'
import json, re, sys
work = sys.argv[1]
def load(name):
    text = open("%s/%s.out" % (work, name)).read()
    assert text.count("\n") == 1, "%s: not one line" % name
    return json.loads(text)
FRAME_KEYS = {"function", "file", "line", "library", "offset", "inlined", "kind"}
FIGURES = {"live_bytes", "live_count", "total_bytes", "total_count", "peak_bytes", "bytes_at_peak"}
MIB = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
def size(text):
    value, unit = text.split()
    return round(float(value) * MIB[unit])
report = json.load(open(work + "/base.json"))
doc = load("report_json")
text = open(work + "/report_text.out").read()
assert doc["schema_version"] == 1 and doc["command"] == "report" and doc["view"] == "sites", doc
for key in ["file", "format_version", "reason", "merged", "processes", "capture", "devices",
            "peak_in_use_bytes", "peak_seconds_after_start", "report_seconds_after_start",
            "site_count", "totals", "metric", "ranked_count", "sites", "omitted_rows",
            "out_of_memory", "growth"]:
    assert key in doc, key
assert doc["metric"] == "bytes_at_peak" and doc["out_of_memory"] == []
# The header's figures: those of the file, and of the text.
assert doc["peak_in_use_bytes"] == report["peak"]["in_use_bytes"]
assert doc["totals"]["live_bytes"] == sum(s["live_bytes"] for s in report["sites"])
assert doc["totals"]["total_count"] == sum(s["total_count"] for s in report["sites"])
assert "sites:    %d sites;" % doc["site_count"] in text
assert doc["processes"][0]["pid"] == report["process"]["pid"] == 4242
assert abs(doc["report_seconds_after_start"] - 42.75) < 1e-9 and "42.8 s after start" in text
assert doc["devices"][0]["in_use_bytes"] == report["devices"][0]["in_use_bytes"]
# The top site: what the text shows, what the file holds.
top = doc["sites"][0]
shown = re.search(r"^#1  (\S+ \S+) at peak  \[(\w+)\]$", text, re.M)
assert top["bytes_at_peak"] == size(shown.group(1)) and top["kind"] == shown.group(2), (top, shown)
assert top["bytes_at_peak"] == max(s["bytes_at_peak"] for s in report["sites"]) == 16 << 20
assert top["label"]["function"] == "init_optimizer_state()" and top["label"] == top["frames"][0]
for site in doc["sites"]:
    assert FIGURES <= set(site) and {"kind", "label", "frames", "stack_count"} <= set(site), site
    for frame in site["frames"]:
        assert set(frame) == FRAME_KEYS, frame
assert top["frames"][0] == {"function": "init_optimizer_state()",
                            "file": "tests/analyzer/fixture_report.cc", "line": 474,
                            "library": "fixture_report_bin", "offset": top["frames"][0]["offset"],
                            "inlined": False, "kind": "native"}, top["frames"][0]
# Rows left out: counted in both.
assert len(doc["sites"]) == 2 and doc["ranked_count"] == 5 and doc["omitted_rows"] == 3, doc["omitted_rows"]
assert "\n… 3 more sites (--top 0 for all)\n" in text, text
# --top 0: every ranked row, none left out.
every = load("report_all_json")
assert len(every["sites"]) == every["ranked_count"] == 5 and every["omitted_rows"] == 0
every_text = open(work + "/report_all_text.out").read()
assert "Top 5 of 5 sites" in every_text and "--top 0 for all" not in every_text
assert [s["bytes_at_peak"] for s in every["sites"]] == [size(m) for m in re.findall(r"^#\d+  (\S+ \S+) at peak", every_text, re.M)]
PY

# --leaks and --stacks: the view by stack lists whole stacks; --python-only: only Python frames.
run leaks_json report "$work/base.json" --leaks --stacks --top 0 --format json
run leaks_text report "$work/base.json" --leaks --stacks --top 0
run python_json report "$work/oom.json" --python-only --leaks --stacks --top 0 --format json
check <<'PY'
import json, re, sys
work = sys.argv[1]
doc = json.load(open(work + "/leaks_json.out"))
text = open(work + "/leaks_text.out").read()
assert doc["view"] == "stacks" and doc["metric"] == "live_bytes", doc["view"]
assert all(s["live_bytes"] > 0 for s in doc["sites"]), "a site with 0 B live"
assert len(doc["sites"]) == doc["ranked_count"] == len(re.findall(r"^#\d+ ", text, re.M))
top = doc["sites"][0]
assert [f["function"] for f in top["frames"]] == ["init_optimizer_state()", "run_training(bool)", "main"], top
python = json.load(open(work + "/python_json.out"))
frames = [f for s in python["sites"] for f in s["frames"]]
assert frames and all(f["kind"] == "python" and f["library"] is None for f in frames), frames
assert {"function": "<module>", "file": "train.py", "line": 3, "library": None, "offset": None,
        "inlined": False, "kind": "python"} in frames, frames
PY

# --tree: nodes under 1% left out and counted; --top 0 keeps them.
run tree_text report "$work/tiny.json" --tree
run tree_json report "$work/tiny.json" --tree --format json
run tree_all_text report "$work/tiny.json" --tree --top 0
run tree_all_json report "$work/tiny.json" --tree --top 0 --format json
check <<'PY'
import json, sys
work = sys.argv[1]
def nodes(node):
    return sum(1 + nodes(child) for child in node["children"])
doc = json.load(open(work + "/tree_json.out"))
text = open(work + "/tree_text.out").read()
every = json.load(open(work + "/tree_all_json.out"))
every_text = open(work + "/tree_all_text.out").read()
assert doc["view"] == "tree" and doc["tree"]["name"] == "all", doc["view"]
assert "tiny_" not in json.dumps(doc["tree"]) and "tiny_" not in text
# The 200 tiny nodes and the vendor library's 4, which are under 1% of the figures now too.
assert doc["omitted_rows"] == 204 and every["omitted_rows"] == 0, (doc["omitted_rows"], every["omitted_rows"])
assert nodes(every["tree"]) == nodes(doc["tree"]) + 204
assert "vendor_alloc" in every_text and "vendor_alloc" not in text
assert "\n… 204 more nodes (--top 0 for all)\n" in text, text
assert every_text.count("tiny_") == 200 and "--top 0 for all" not in every_text
assert doc["tree"]["bytes_at_peak"] == doc["totals"]["bytes_at_peak"]
PY

# --growth and the summary's growing section: the growing sites, the first --top of them.
run growth_text report "$work/growth.json" --growth --top 2
run growth_json report "$work/growth.json" --growth --top 2 --format json
run growth_all_text report "$work/growth.json" --growth --top 0
run growth_all_json report "$work/growth.json" --growth --top 0 --format json
run growing_text report "$work/growth.json" --top 1
run growing_json report "$work/growth.json" --top 1 --format json
check <<'PY'
import json, re, sys
work = sys.argv[1]
doc = json.load(open(work + "/growth_json.out"))
text = open(work + "/growth_text.out").read()
growth = doc["growth"]
assert doc["view"] == "growth" and growth["has_history"] and growth["pattern"] is None, doc
assert len(growth["sites"]) == 2 and growth["omitted_rows"] == 2, growth
assert "\n… 2 more growing sites (--top 0 for all)\n" in text, text
top = growth["sites"][0]
assert top["gained_bytes"] == 76 << 20 and top["final_bytes"] == 80 << 20, top
assert "#1  +76.0 MiB since 1.0 s after the start: 4.0 MiB/s  [%s]" % top["kind"] in text, text
assert abs(top["bytes_per_second"] - (4 << 20)) < 1 and abs(top["start_seconds_after_start"] - 1) < 1e-9
assert top["frames"][0]["function"] == "model::Linear::forward(int)", top
every = json.load(open(work + "/growth_all_json.out"))["growth"]
assert len(every["sites"]) == 4 and every["omitted_rows"] == 0, every
every_text = open(work + "/growth_all_text.out").read()
assert len(re.findall(r"^#\d+  \+", every_text, re.M)) == 4 and "--top 0 for all" not in every_text
summary = json.load(open(work + "/growing_json.out"))
assert summary["view"] == "sites" and len(summary["growth"]["sites"]) == 1
assert summary["growth"]["omitted_rows"] == 3
assert "… 3 more growing sites (--top 0 for all)" in open(work + "/growing_text.out").read()
PY

# --function and --module choose the growing sites too (they were ignored: all four listed).
run growth_function_text report "$work/growth.json" --growth --function prefetch_batch
run growth_function_json report "$work/growth.json" --growth --function prefetch_batch --format json
run growth_module_json report "$work/growth.json" --growth --module 'libmissing_vendor*' --format json
run growing_function_text report "$work/growth.json" --function init_optimizer_state
check <<'PY'
import json, re, sys
work = sys.argv[1]
text = open(work + "/growth_function_text.out").read()
assert len(re.findall(r"^#\d+  \+", text, re.M)) == 1, text
assert "#1  +57.0 MiB since 1.0 s after the start: 3.0 MiB/s  [async]" in text, text
growth = json.load(open(work + "/growth_function_json.out"))["growth"]
assert [s["gained_bytes"] for s in growth["sites"]] == [57 << 20] and growth["omitted_rows"] == 0
growth = json.load(open(work + "/growth_module_json.out"))["growth"]
assert [s["gained_bytes"] for s in growth["sites"]] == [38 << 20], growth
text = open(work + "/growing_function_text.out").read()
growing = text[text.index("growing:"):].split("\n\n")[0]
assert re.fullmatch(r"growing:\n +\+19\.0 MiB  1\.0 MiB/s  init_optimizer_state\(\) .*", growing), growing
PY

# Sites beyond the history's budget have no series: whether they grow cannot be told, and --growth
# says so rather than that no site grew.
run untracked_text report "$work/untracked.json" --growth
run untracked_json report "$work/untracked.json" --growth --format json
run some_untracked_text report "$work/some_untracked.json" --growth --top 0
run some_untracked_json report "$work/some_untracked.json" --growth --format json
run level_untracked_text report "$work/level_untracked.json" --growth
check <<'PY'
import json, sys
work = sys.argv[1]
text = open(work + "/untracked_text.out").read()
assert "No site grew" not in text, text
assert ("\nGrowth cannot be told for 7 sites beyond what the history's budget holds "
        "(VRAMSHIM_HISTORY, 64.0 KiB here): they have no history.\n") in text, text
growth = json.load(open(work + "/untracked_json.out"))["growth"]
assert growth["sites"] == [] and growth["untracked_count"] == 7, growth
text = open(work + "/some_untracked_text.out").read()
assert text.endswith("\n\nGrowth cannot be told for 3 sites beyond what the history's budget "
                     "holds (VRAMSHIM_HISTORY, 8.0 MiB here): they have no history.\n"), text
growth = json.load(open(work + "/some_untracked_json.out"))["growth"]
assert len(growth["sites"]) == 4 and growth["untracked_count"] == 3, growth
text = open(work + "/level_untracked_text.out").read()
assert ("\nNo site with a history grew steadily until the report; growth cannot be told for 3 "
        "sites beyond what the history's budget holds (VRAMSHIM_HISTORY, 8.0 MiB here): they "
        "have no history.\n") in text, text
growth = json.load(open(work + "/growth_json.out"))["growth"]
assert growth["untracked_count"] == 0, growth
PY

# An out-of-memory report: its explanation, with frames as everywhere else.
run oom_json report "$work/oom.json" --format json
check <<'PY'
import json, sys
doc = json.load(open(sys.argv[1] + "/oom_json.out"))
[oom] = doc["out_of_memory"]
assert oom["request"]["bytes"] == 6 << 20 and oom["verdict"] == "fragmentation", oom
assert oom["request"]["frames"][0]["function"] == "decode_step(int)"
assert oom["request"]["frames"][0]["kind"] == "native" and oom["request"]["frames"][0]["library"] == "fixture_report_bin"
PY

# diff: the changes, the first --top of them, the rest counted.
run diff_text diff "$work/rank0.json" "$work/rank2.json" --top 1
run diff_json diff "$work/rank0.json" "$work/rank2.json" --top 1 --format json
run diff_all_json diff "$work/rank0.json" "$work/rank2.json" --top 0 --format json
run diff_new_json diff "$work/base.json" "$work/leak.json" --format json
check <<'PY'
import json, re, sys
work = sys.argv[1]
doc = json.load(open(work + "/diff_json.out"))
text = open(work + "/diff_text.out").read()
assert doc["schema_version"] == 1 and doc["command"] == "diff", doc
old, new = json.load(open(work + "/rank0.json")), json.load(open(work + "/rank2.json"))
assert doc["old"]["totals"]["live_bytes"] == sum(s["live_bytes"] for s in old["sites"])
assert doc["new"]["totals"]["live_bytes"] == sum(s["live_bytes"] for s in new["sites"])
assert doc["new"]["peak_in_use_bytes"] == new["peak"]["in_use_bytes"]
assert len(doc["changes"]) == 1 and doc["omitted_rows"] == doc["changed_count"] - 1 > 0, doc
assert "\n… %d more changed sites (--top 0 for all)\n" % doc["omitted_rows"] in text, text
top = doc["changes"][0]
assert top["live_growth_bytes"] == top["after"]["live_bytes"] - top["before"]["live_bytes"] == 32 << 20, top
assert re.search(r"^#1  \+32\.0 MiB live  \[%s\]$" % top["kind"], text, re.M), text
every = json.load(open(work + "/diff_all_json.out"))
assert len(every["changes"]) == every["changed_count"] == doc["changed_count"] and every["omitted_rows"] == 0
leak = json.load(open(work + "/diff_new_json.out"))["changes"][0]
assert leak["status"] == "new" and leak["label"]["function"] == "leak_in_optimizer_step()", leak
PY

# merge: what it merged; the merged report itself is the file.
run merge_json merge "$work/rank0.json" "$work/rank1.json" "$work/rank2.json" -o "$work/merged.json" --format json
check <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/merge_json.out"))
merged = json.load(open(work + "/merged.json"))
assert doc["schema_version"] == 1 and doc["command"] == "merge" and doc["output"] == work + "/merged.json"
assert doc["files"] == [work + "/rank%d.json" % r for r in range(3)]
assert [p["rank"] for p in doc["processes"]] == [0, 1, 2] and [p["pid"] for p in doc["processes"]] == [100, 101, 102]
assert doc["site_count"] == len(merged["sites"]) and doc["stack_count"] == len(merged["stacks"])
assert doc["totals"]["live_bytes"] == sum(s["live_bytes"] for s in merged["sites"])
assert doc["peak_in_use_bytes"] == merged["peak"]["in_use_bytes"]
PY

# A process is merged once: a file given twice, or an earlier merge among the inputs (as
# `merge vramshim.*.json -o vramshim.job.json` run again gives), is left out with a line saying so.
run merge_twice merge "$work/rank0.json" "$work/rank1.json" "$work/rank1.json" "$work/merged.json" \
  "$work/rank2.json" -o "$work/merged_twice.json" --format json
check <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/merge_twice.out"))
assert [p["pid"] for p in doc["processes"]] == [100, 101, 102], doc["processes"]
err = [line for line in open(work + "/merge_twice.err").read().splitlines() if "left out" in line]
assert len(err) == 2, err
assert err[0] == "vramshim: %s/rank1.json: left out: it is %s/rank1.json, merged already" % (work, work), err
assert err[1].startswith("vramshim: " + work + "/merged.json: left out: its process is"), err
PY

# A file given twice whose process is not known (an imported snapshot's, pid 0, which is never
# taken for another's) is left out too: it was merged twice, every figure doubled.
python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
report["process"]["pid"] = 0
json.dump(report, open(sys.argv[2], "w"))' "$work/rank1.json" "$work/imported.json"
run merge_imported_twice merge "$work/imported.json" "$work/imported.json" -o "$work/imported_twice.json" \
  --format json
check <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/merge_imported_twice.out"))
assert [p["pid"] for p in doc["processes"]] == [0], doc["processes"]
err = [line for line in open(work + "/merge_imported_twice.err").read().splitlines() if "left out" in line]
assert err == ["vramshim: %s/imported.json: left out: it is %s/imported.json, merged already" % (work, work)], err
PY

# A process's exit report and its out-of-memory report (README's `merge mem.*.json`: mem.N.json
# sorts first): the latter is left out, its explanation kept with the process, its stacks the merged
# report's (another process first, so that they are not the out-of-memory report's own).
cp "$work/base.json" "$work/mem.4242.json"
cp "$work/oom.json" "$work/mem.4242.oom.json"
run merge_exit_oom merge "$work/rank0.json" "$work"/mem.4242*.json -o "$work/exit_oom.json"
run exit_oom_json report "$work/exit_oom.json" --format json
run exit_oom_text report "$work/exit_oom.json"
run oom_alone_json report "$work/oom.json" --format json
check <<'PY'
import json, sys
work = sys.argv[1]
err = open(work + "/merge_exit_oom.err").read()
assert ("vramshim: %s/mem.4242.oom.json: left out: its process is %s/mem.4242.json's, merged "
        "already; its out-of-memory explanation is kept\n" % (work, work)) in err, err
merged = json.load(open(work + "/exit_oom.json"))
assert [p["pid"] for p in merged["merged_from"]] == [100, 4242], merged["merged_from"]
assert "oom" not in merged["merged_from"][0] and "oom" in merged["merged_from"][1]
shown = json.loads(open(work + "/exit_oom_json.out").read())["out_of_memory"]
alone = json.loads(open(work + "/oom_alone_json.out").read())["out_of_memory"]
assert len(shown) == 1 and len(alone) == 1 and shown[0]["process"] == 1, shown
for key in ["verdict", "explanation", "in_use_bytes"]:
    assert shown[0][key] == alone[0][key], key
assert shown[0]["request"]["frames"] == alone[0]["request"]["frames"] != [], shown[0]["request"]
assert ([s["frames"] for s in shown[0]["leading_sites"]] ==
        [s["frames"] for s in alone[0]["leading_sites"]]), shown[0]["leading_sites"]
text = open(work + "/exit_oom_text.out").read()
assert alone[0]["explanation"] in text, text
PY

# Two stacks under one label (a frame more outside): one row, and one site in the header, of
# `report` and of `html` alike.
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/base.json"))
site = dict(doc["sites"][0])
frames = doc["stacks"][site["stack"]]["frames"]
site["stack"] = len(doc["stacks"])
doc["stacks"].append({"id": site["stack"], "frames": frames + [frames[-1]]})
doc["sites"].append(site)
json.dump(doc, open(work + "/one_label.json", "w"))
PY
run one_label_text report "$work/one_label.json"
run one_label_html html "$work/one_label.json" -o "$work/one_label.html"
check <<'PY'
import re, sys
work = sys.argv[1]
def site_counts(name):
    return re.findall(r"sites: +(\d+) sites?;", open("%s/%s" % (work, name)).read())
assert site_counts("one_label_text.out") == ["7"], site_counts("one_label_text.out")
assert site_counts("one_label.html") == ["7"], site_counts("one_label.html")
PY

# A repeating pattern is searched in the trace's newest half: the text says so. And a site whose
# bytes changed but not its count of allocations: "±0 allocations", not "0 allocations".
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/growth.json"))
start = doc["process"]["start_time"]
events = [[start + 1 + i * 0.01, "alloc", (1 << 40) + (i << 20), 1 << 20, 0, None, i % 4]
          for i in range(100)]
doc["trace"] = {"capacity": 262144, "recorded": len(events), "events": events}
json.dump(doc, open(work + "/pattern.json", "w"))
doc = json.load(open(work + "/base.json"))
doc["sites"][0]["live_bytes"] += 1 << 20
json.dump(doc, open(work + "/bigger.json", "w"))
PY
run pattern_text report "$work/pattern.json" --growth
run pattern_json report "$work/pattern.json" --growth --format json
run bigger_text diff "$work/base.json" "$work/bigger.json"
check <<'PY'
import json, re, sys
work = sys.argv[1]
text = open(work + "/pattern_text.out").read()
assert re.search(r"a step every 40\.0 ms, 4 allocations per step \(\d+ steps in the last 50 "
                 r"allocations of the trace\)", text), text
pattern = json.loads(open(work + "/pattern_json.out").read())["growth"]["pattern"]
assert pattern["allocations_per_step"] == 4 and pattern["allocations_searched"] == 50, pattern
diff = open(work + "/bigger_text.out").read()
assert "(±0 allocations); total" in diff and "(0 allocations)" not in diff, diff
PY

# How a process ended, as its report says (FORMAT.md's "crash" and "terminated"): the text header,
# the JSON's processes, the page's header and, per process, a merged report's header.
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/base.json"))
doc["reason"] = "crash"
doc["crash"] = {"signal": 11, "signal_name": "SIGSEGV", "code": 1, "address": "0x0", "thread_id": 123}
json.dump(doc, open(work + "/crashed.json", "w"))
doc = json.load(open(work + "/leak.json"))
doc["terminated"] = {"signal": 15, "signal_name": "SIGTERM", "code": 0, "sender_pid": 456,
                     "thread_id": 4243}
json.dump(doc, open(work + "/terminated.json", "w"))
PY
run crashed_text report "$work/crashed.json"
run crashed_json report "$work/crashed.json" --format json
run terminated_text report "$work/terminated.json"
run terminated_json report "$work/terminated.json" --format json
run crashed_html html "$work/crashed.json" -o "$work/crashed.html"
run ended_merge merge "$work/crashed.json" "$work/terminated.json" "$work/rank0.json" \
  -o "$work/ended_merged.json"
run ended_merged_text report "$work/ended_merged.json"
run ended_merged_json report "$work/ended_merged.json" --format json
check <<'PY'
import json, sys
work = sys.argv[1]
def read(name):
    return open("%s/%s" % (work, name)).read()
crashed = read("crashed_text.out")
assert "\nreport:   written at crash" in crashed, crashed
assert "\ncrashed:  SIGSEGV (SEGV_MAPERR) at 0x0 on thread 123\n" in crashed, crashed
assert "crashed:" not in read("report_text.out")
terminated = read("terminated_text.out")
assert "\nended:    by SIGTERM from pid 456 on thread 4243\n" in terminated, terminated
assert "SIGSEGV (SEGV_MAPERR) at 0x0 on thread 123" in read("crashed.html")
process = json.loads(read("crashed_json.out"))["processes"][0]
assert process["reason"] == "crash" and process["terminated"] is None, process
assert process["crash"] == {"signal": 11, "signal_name": "SIGSEGV", "code": 1, "address": "0x0",
                            "sender_pid": None, "thread_id": 123}, process
process = json.loads(read("terminated_json.out"))["processes"][0]
assert process["reason"] == "exit" and process["crash"] is None, process
assert process["terminated"]["sender_pid"] == 456 and process["terminated"]["signal"] == 15
# Merged: the crashed and the terminated process say so, the rank that exited says nothing more.
merged = read("ended_merged_text.out").splitlines()
lines = {line.split(":")[0].strip().split(",")[0]: line for line in merged if "pid " in line}
assert lines["pid 4242"].endswith("; crashed: SIGSEGV (SEGV_MAPERR) at 0x0 on thread 123"), merged
assert lines["pid 4243"].endswith("; ended by SIGTERM from pid 456 on thread 4243"), merged
assert "crashed" not in lines["pid 100"] and "ended" not in lines["pid 100"], merged
processes = json.loads(read("ended_merged_json.out"))["processes"]
assert [p["reason"] for p in processes] == ["crash", "exit", "exit"], processes
assert processes[0]["crash"]["thread_id"] == 123 and processes[1]["terminated"]["sender_pid"] == 456
assert processes[2]["crash"] is None and processes[2]["terminated"] is None, processes
PY

# Errors in JSON mode: one line on standard error, nothing on standard output.
expect_error() {  # STATUS ARGS…
  local status=$1 rc=0
  shift
  "$cli" "$@" >"$work/error.out" 2>"$work/error.err" || rc=$?
  if [[ $rc -ne $status || -s "$work/error.out" || $(wc -l <"$work/error.err") -ne 1 ]] ||
    ! grep -q '^vramshim: ' "$work/error.err"; then
    echo "FAIL: $* exited $rc (expected $status) with stdout '$(cat "$work/error.out")' and stderr '$(cat "$work/error.err")'" >&2
    failures=$((failures + 1))
  fi
}
echo '{"format": "vramshim-report", "version": 1, "sites": 3}' >"$work/broken.json"
expect_error 1 report "$work/missing.json" --format json
expect_error 1 report "$work/broken.json" --format json --tree
expect_error 1 diff "$work/base.json" "$work/broken.json" --format json
expect_error 1 merge "$work/base.json" "$work/broken.json" -o "$work/never.json" --format json
expect_error 2 merge "$work/base.json" -o - --format json
expect_error 2 report "$work/base.json" --format yaml

if ((failures)); then
  echo "$failures JSON check(s) failed" >&2
  exit 1
fi
echo "all JSON checks passed"
