"""What a scrape costs: `vramshim exporter` asked for /metrics with 1, 10 and 50 programs running
under the shim (the simulated driver), and what scraping costs a program's allocation rate.

    bazel build //analyzer:vramshim //shim:vramshim //tests/fakecuda:libcuda.so.1 \
        //tests/integration/programs:cached_idle
    python3 bench/live/scrape_bench.py        # from the repository root; not run by CI

Prints, per process count, the scrape's wall time (min and median of 100 scrapes) and the
exporter's CPU time per scrape (user + system, from /proc); then the CPU time per allocation pair of
`cached_idle throughput` (all its threads, the shim's control thread serving the scrapes included)
alone and while scraped 10 times a second, in interleaved rounds (min and median of the ratio). CPU
time rather than wall time: on a loaded machine the wall-clock rate measures the neighbours.
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

BIN = os.path.abspath("bazel-bin")
CLI = BIN + "/analyzer/vramshim"
SHIM = BIN + "/shim/libvramshim.so"
FAKE_DRIVER_DIR = BIN + "/tests/fakecuda"
PROGRAM = BIN + "/tests/integration/programs/cached_idle"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def main():
    work = tempfile.mkdtemp(prefix="vb", dir="/tmp")
    env = dict(os.environ, XDG_RUNTIME_DIR=work, VRAMSHIM_REPORT="off")
    shimmed = dict(env, LD_PRELOAD=SHIM, LD_LIBRARY_PATH=FAKE_DRIVER_DIR)
    exporter = subprocess.Popen([CLI, "exporter", "--listen", "127.0.0.1:0", "--dir",
                                 work + "/vramshim"], env=env, stderr=subprocess.PIPE, text=True)
    port = re.search(r":(\d+)/metrics", exporter.stderr.readline()).group(1)
    threading.Thread(target=exporter.stderr.read, daemon=True).start()
    url = "http://127.0.0.1:%s/metrics" % port
    programs = []
    try:
        print("processes  scrape_ms_min  scrape_ms_median  exporter_cpu_ms_per_scrape")
        for count in (1, 10, 50):
            while len(programs) < count:
                program = subprocess.Popen([PROGRAM, "hold", "4", str(1 << 20)], env=shimmed,
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                           text=True)
                program.stdout.readline()
                programs.append(program)
            scrape(url)
            times = []
            cpu_before = cpu_seconds(exporter.pid)
            for _ in range(100):
                start = time.perf_counter()
                body = scrape(url)
                times.append((time.perf_counter() - start) * 1000)
            cpu = (cpu_seconds(exporter.pid) - cpu_before) / 100 * 1000
            assert b"vramshim_processes_answered %d\n" % count in body, body[-400:]
            print("%9d  %13.2f  %16.2f  %26.2f" % (count, min(times), statistics.median(times), cpu))
        for program in programs:
            program.terminate()
            program.wait()
        programs = []

        def cpu_ns_per_pair():
            before = os.times()
            run = subprocess.run([PROGRAM, "throughput", "1"], env=shimmed, capture_output=True,
                                 text=True)
            after = os.times()
            cpu = (after.children_user - before.children_user +
                   after.children_system - before.children_system)
            return cpu * 1e9 / float(run.stdout.split("=")[1])  # 1 s: pairs/s is the pair count

        ratios = []
        for _ in range(9):
            alone = cpu_ns_per_pair()
            stop = threading.Event()

            def scraper():
                while not stop.is_set():
                    scrape(url)
                    stop.wait(0.1)
            thread = threading.Thread(target=scraper)
            thread.start()
            scraped = cpu_ns_per_pair()
            stop.set()
            thread.join()
            ratios.append(scraped / alone)
            print("CPU ns per pair: alone %.0f, scraped at 10 Hz %.0f, ratio %.3f" %
                  (alone, scraped, scraped / alone))
        print("ratio scraped/alone: min %.3f median %.3f" % (min(ratios), statistics.median(ratios)))
    finally:
        for program in programs:
            program.terminate()
        exporter.terminate()
        exporter.wait()


main()
