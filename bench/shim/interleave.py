"""Runs copies of shim_bench (builds of different commits, or one build in different environments)
in interleaved rounds, so that a shared machine's drift hits every variant alike, and prints each
benchmark's min and median per variant, its ratio to the first variant, and the ratios asked for.

Usage: interleave.py [--rounds N] [--filter REGEX] [--min-time S] [--ratio NUM=DEN ...]
                     VARIANT ...
  VARIANT: NAME=DIR[,VAR=VALUE...], DIR a copy of bazel-bin/bench/shim (shim_bench and
  shim_bench.runfiles, copied with `cp -rL`); each VAR=VALUE is set for that variant's runs on top
  of VRAMSHIM_STACKS=off.
  --ratio NUM=DEN: regexes naming two benchmarks; prints NUM's time over DEN's within each
  variant, per round, then min and median of those (e.g. churn at 1M live over churn at 1k).

Example: bench/shim/interleave.py --filter 'ShimPair/4096/threads:1$|Churn' \
  --ratio 'Churn/1000000/0=Churn/1000/0' base=/tmp/bench-base new=/tmp/bench-new
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys


def parse_variant(text):
    name, _, rest = text.partition("=")
    directory, *assignments = rest.split(",")
    env = {"VRAMSHIM_STACKS": "off"}
    for assignment in assignments:
        var, _, value = assignment.partition("=")
        env[var] = value
    return name, directory, env


def run_once(directory, env, benchmark_filter, min_time):
    runfiles = os.path.join(directory, "shim_bench.runfiles", "vramshim")
    output = subprocess.run(
        ["../../shim_bench", "--benchmark_format=json", "--benchmark_min_time=%s" % min_time,
         "--benchmark_filter=" + benchmark_filter],
        cwd=runfiles, env={**os.environ, **env}, check=True, capture_output=True, text=True).stdout
    # Per benchmark: ns per item by the time Google Benchmark reports (real time where the
    # benchmark asks for it, else CPU time).
    times = {}
    for result in json.loads(output)["benchmarks"]:
        key = "real_time" if result["name"].endswith("real_time") else "cpu_time"
        items = result.get("items_per_second")
        times[result["name"]] = 1e9 / items if items else result[key]
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--filter", default=".")
    parser.add_argument("--min-time", default="0.3")
    parser.add_argument("--ratio", action="append", default=[])
    parser.add_argument("variants", nargs="+")
    args = parser.parse_args()
    variants = [parse_variant(text) for text in args.variants]

    times = collections.defaultdict(list)  # (variant, benchmark) -> ns per item, one per round
    rounds = []  # per round: variant -> {benchmark: ns}
    for round_number in range(args.rounds):
        this_round = {}
        for name, directory, env in variants:
            this_round[name] = run_once(directory, env, args.filter, args.min_time)
            for benchmark, ns in this_round[name].items():
                times[name, benchmark].append(ns)
        rounds.append(this_round)
        print("round %d of %d done" % (round_number + 1, args.rounds), file=sys.stderr)

    benchmarks = sorted({benchmark for _, benchmark in times}, key=list(
        dict.fromkeys(b for r in rounds for v in r.values() for b in v)).index)
    first = variants[0][0]
    print("ns per item (pair, allocation or op), min / median of %d interleaved rounds" %
          args.rounds)
    for benchmark in benchmarks:
        print(benchmark)
        for name, _, _ in variants:
            values = times.get((name, benchmark))
            if not values:
                continue
            line = "  %-12s %8.1f / %8.1f" % (name, min(values), statistics.median(values))
            base = times.get((first, benchmark))
            if name != first and base:
                line += "   x%.2f / x%.2f of %s" % (min(values) / min(base),
                                                    statistics.median(values) /
                                                    statistics.median(base), first)
            print(line)
    for ratio in args.ratio:
        numerator, _, denominator = ratio.partition("=")
        print("ratio %s over %s, per round, min / median" % (numerator, denominator))
        for name, _, _ in variants:
            per_round = []
            for this_round in rounds:
                got = this_round[name]
                num = [ns for b, ns in got.items() if re.search(numerator, b)]
                den = [ns for b, ns in got.items() if re.search(denominator, b)]
                if len(num) == 1 and len(den) == 1:
                    per_round.append(num[0] / den[0])
            if per_round:
                print("  %-12s %.2f / %.2f" % (name, min(per_round), statistics.median(per_round)))
            else:
                print("  %-12s (each regex must name exactly one benchmark)" % name)


if __name__ == "__main__":
    main()
