"""Summarizes bench/peers/run.sh's results: ns added per tracked allocation and the ratios, from
the allocating thread's CPU time (what the tool's work costs that thread) and from wall time (which
also counts waits, e.g. on heaptrack's pipe or on the simulated driver's stream threads).

Usage: summarize.py RESULTS ROUNDS, where each line of RESULTS is
"GROUP CONFIG WALL_NS_PER_PAIR CPU_NS_PER_PAIR".
"""
import collections
import statistics
import sys

PICKS = (("median", statistics.median), ("min", min))
METRICS = (("the allocating thread's CPU time", 1),
           ("wall time (on a busy machine it counts descheduling too: trust CPU time)", 0))


def main():
    path, rounds = sys.argv[1], sys.argv[2]
    runs = collections.defaultdict(list)
    with open(path) as results:
        for line in results:
            group, config, wall, cpu = line.split()
            runs[group, config].append((float(wall), float(cpu)))

    def cell(value):
        return "%7.0f" % value if value is not None else "      -"

    def ratio(ours, theirs):
        return "%.2f" % (ours / theirs) if ours is not None and theirs else "-"

    for metric_name, metric in METRICS:

        def figure(group, config, pick):
            values = runs.get((group, config))
            return pick(value[metric] for value in values) if values else None

        def added(group, tool, base, pick):
            with_tool, without = figure(group, tool, pick), figure(group, base, pick)
            return None if with_tool is None or without is None else with_tool - without

        # One line per pick: our base, with our tool, added; theirs likewise; the ratio of added.
        def rows(group, label, ours, theirs):
            for name, pick in PICKS:
                our_added = added(group, ours[0], ours[1], pick)
                their_added = added(group, theirs[0], theirs[1], pick)
                print("%-5s %-6s|%s%s%s |%s%s%s | %s" % (
                    label, name, cell(figure(group, ours[1], pick)),
                    cell(figure(group, ours[0], pick)), cell(our_added),
                    cell(figure(group, theirs[1], pick)), cell(figure(group, theirs[0], pick)),
                    cell(their_added), ratio(our_added, their_added)))
                label = ""

        print("== ns per allocation pair, %s, over %s interleaved rounds" % (metric_name, rounds))
        print("C++, pairs at call depth D. vramshim: cuMemAlloc_v2/cuMemFree_v2 against the")
        print("simulated driver, VRAMSHIM_STACKS=off vs all; heaptrack: malloc/free, without vs")
        print("with heaptrack")
        print("depth        |    off     all   added |   none heaptrk   added | vramshim/heaptrack")
        for depth in (10, 40, 64):
            rows("cxx%d" % depth, str(depth), ("shim_all", "shim_off"), ("heaptrack", "plain"))
        print("Python, pairs at Python depth 30 through ctypes. vramshim: cuMemAlloc_v2/")
        print("cuMemFree_v2, VRAMSHIM_PYTHON=off vs auto (stacks all); memray: malloc/free in a C")
        print("library, without vs with memray run --native")
        print("depth        | py off py auto   added |   none  memray   added | vramshim/memray")
        rows("python30", "30", ("shim_python_auto", "shim_python_off"), ("memray", "plain"))
        print()


main()
