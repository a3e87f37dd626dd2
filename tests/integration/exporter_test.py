"""`vramshim exporter` against programs running under the shim (the simulated driver):

- a real Prometheus server, started on a loopback port with a scrape config pointing at the
  exporter, holds vramshim_in_use_bytes of two running programs with their values after two
  scrapes;
- the exporter's output passes `promtool check metrics` without a lint warning;
- a program stopped with SIGSTOP: the scrape still ends within its budget and counts it;
- a second exporter on the same port fails to start;
- 200 scrapers connecting while the exporter is stopped are all queued by the kernel and answered;
- 200 concurrent scrapes and malformed HTTP requests: the exporter keeps serving right answers.
"""

import atexit
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.abspath("tests/support"))
from checks import check, failures  # noqa: E402  (tests/support/checks.py)

CLI = os.path.abspath("analyzer/vramshim")
SHIM = os.path.abspath("shim/libvramshim.so")
FAKE_DRIVER_DIR = os.path.abspath("tests/fakecuda")
PROGRAM = os.path.abspath("tests/integration/programs/cached_idle")
MIB = 1 << 20
BUDGET_MS = 1000


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode()


def wait_for(what, predicate, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit("timed out waiting for " + what)


def start_program(work, arguments, ready="ready\n", **env):
    env = dict(os.environ, XDG_RUNTIME_DIR=work, VRAMSHIM_REPORT="off", LD_PRELOAD=SHIM,
               LD_LIBRARY_PATH=FAKE_DRIVER_DIR, **env)
    program = subprocess.Popen([PROGRAM] + arguments, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    line = program.stdout.readline()
    check(line == ready, "the program did not start: " + line)
    return program


def main():
    work = tempfile.mkdtemp(prefix="vx", dir="/tmp")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    socket_dir = work + "/vramshim"
    programs = [start_program(work, ["hold", "3", str(MIB)]),
                start_program(work, ["hold", "5", str(MIB)])]
    expected = {programs[0].pid: 3 * MIB, programs[1].pid: 5 * MIB}
    stopped = start_program(work, ["hold", "1", str(MIB)])
    # Refused by its limit three times; names its rank and job.
    failing = start_program(work, ["fail", "3", str(2 * MIB)], "failures=3 ready\n",
                            VRAMSHIM_LIMIT="1M", RANK="2", SLURM_JOB_ID="4711")
    programs.append(failing)

    exporter = subprocess.Popen(
        [CLI, "exporter", "--listen", "127.0.0.1:0", "--dir", socket_dir, "--budget",
         str(BUDGET_MS)],
        env=dict(os.environ, XDG_RUNTIME_DIR=work), stderr=subprocess.PIPE, text=True)
    banner = exporter.stderr.readline()
    match = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", banner)
    if not match:
        raise SystemExit("the exporter did not start: " + banner)
    # What the exporter says later (skipped processes) is drained, never left to fill the pipe.
    threading.Thread(target=exporter.stderr.read, daemon=True).start()
    metrics_url = "http://127.0.0.1:%s/metrics" % match.group(1)
    # A second exporter on the same port fails to start rather than share its scrapes.
    second = subprocess.run([CLI, "exporter", "--listen", "127.0.0.1:" + match.group(1), "--dir",
                             socket_dir], env=dict(os.environ, XDG_RUNTIME_DIR=work),
                            capture_output=True, text=True, timeout=30)
    check(second.returncode != 0 and "cannot listen on 127.0.0.1:" + match.group(1) in second.stderr,
          "a second exporter on the same port: %d %s" % (second.returncode, second.stderr))

    # The port is digits only (std::stoi took "+5" and " 0"); an empty host is every address
    # (node_exporter's ":PORT"), served on IPv4's loopback too.
    for listen in ("127.0.0.1:+5", "127.0.0.1: 0", "127.0.0.1:65536", "127.0.0.1:", "10046"):
        refused = subprocess.run([CLI, "exporter", "--listen", listen, "--dir", socket_dir],
                                 env=dict(os.environ, XDG_RUNTIME_DIR=work), capture_output=True,
                                 text=True, timeout=30)
        check(refused.returncode == 2 and refused.stderr.startswith("vramshim: exporter: --listen "
                                                                    "needs ")
              and refused.stderr.count("\n") == 1,
              "--listen %r: %d %s" % (listen, refused.returncode, refused.stderr))
    everywhere = subprocess.Popen([CLI, "exporter", "--listen", ":0", "--dir", socket_dir],
                                  env=dict(os.environ, XDG_RUNTIME_DIR=work),
                                  stderr=subprocess.PIPE, text=True)
    served = re.search(r"serving http://(\[::\]|0\.0\.0\.0):(\d+)/metrics",
                       everywhere.stderr.readline())
    check(served and get("http://127.0.0.1:%s/" % served.group(2))[1].startswith("vramshim exporter"),
          "--listen :0 does not serve every address")
    everywhere.terminate()
    everywhere.wait(timeout=30)

    prometheus_port = free_port()
    config = work + "/prometheus.yml"
    with open(config, "w") as out:
        out.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                  "scrape_configs:\n  - job_name: vramshim\n    static_configs:\n"
                  "      - targets: ['127.0.0.1:%s']\n" % match.group(1))
    prometheus = subprocess.Popen(
        ["prometheus", "--config.file=" + config, "--storage.tsdb.path=" + work + "/tsdb",
         "--web.listen-address=127.0.0.1:%d" % prometheus_port],
        stdout=subprocess.DEVNULL, stderr=open(work + "/prometheus.log", "w"))
    api = "http://127.0.0.1:%d/api/v1/query?query=" % prometheus_port

    def query(promql):
        try:
            status, body = get(api + urllib.parse.quote(promql), timeout=5)
        except OSError:
            return None
        answer = json.loads(body)
        return answer["data"]["result"] if answer.get("status") == "success" else None

    try:
        # The stopped program waits until Prometheus has its figures.
        def scraped_twice():
            result = query('count_over_time(vramshim_processes_answered[5m])')
            return result and float(result[0]["value"][1]) >= 2
        wait_for("two scrapes", scraped_twice)
        series = query("vramshim_in_use_bytes")
        found = {int(s["metric"]["pid"]): float(s["value"][1]) for s in series}
        for pid, bytes_held in expected.items():
            check(found.get(pid) == bytes_held,
                  "Prometheus has %s for pid %d, not %d" % (found.get(pid), pid, bytes_held))
        # The command, cut at 100 characters.
        commands = [s["metric"]["command"] for s in series]
        check(all(len(c) <= 100 and (PROGRAM + " ").startswith(c[:-3]) and c.endswith("...")
                  if len(PROGRAM) > 97 else c.startswith(PROGRAM + " ") for c in commands),
              "the command labels: %s" % commands)

        status, text = get(metrics_url)
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                              capture_output=True)
        check(lint.returncode == 0 and lint.stdout == "" and lint.stderr == "",
              "promtool check metrics: %d %s %s" % (lint.returncode, lint.stdout, lint.stderr))
        check(text.count("# HELP vramshim_in_use_bytes ") == 1, "one HELP line per metric")
        # When the figures were collected: time() minus it is their age (Prometheus scrapes every
        # second, and the exporter collects at most once a second).
        ended = re.search(r"^vramshim_collection_end_time_seconds (\S+)$", text, re.M)
        check(ended and 0 <= time.time() - float(ended.group(1)) < 10,
              "the collection's end time, at %.1f:\n%s" % (time.time(), text))
        # Each holding program allocated from one call path: one site holds everything. Its device
        # is labelled by its CUDA ordinal and by the GPU's PCI bus id in NVML's form, as DCGM labels
        # it (the simulated driver's device 0 is 0000:18:00.0).
        for pid, bytes_held in expected.items():
            check(re.search(r'^vramshim_in_use_bytes\{pid="%d",.*,device="0",'
                            r'pci_bus_id="00000000:18:00\.0"\} %d$' % (pid, bytes_held), text, re.M),
                  "pid %d's device 0 without its bus id:\n%s" % (pid, text))
            check(re.search(r'^vramshim_site_live_bytes\{pid="%d",.*,kind="device",site="[^"]+"\} %d$'
                            % (pid, bytes_held), text, re.M),
                  "no site of pid %d holds %d bytes:\n%s" % (pid, bytes_held, text))
        check(re.search(r'^vramshim_out_of_memory_failures_total\{pid="%d",uid="%d",command="[^"]*",'
                        r'host="[^"]+",rank="2",job_id="4711",device="0",pci_bus_id="00000000:18:00\.0"\} 3$'
                        % (failing.pid, os.geteuid()),
                        text, re.M),
              "the failing program's out-of-memory count, rank and job:\n" + text)

        # Prometheus is done with. A scrape that arrives during a collection takes that
        # collection's answers: one scrape waits out any collection Prometheus left running, so
        # that the next ones start their own after the stop.
        prometheus.terminate()
        prometheus.wait(timeout=30)
        get(metrics_url)

        # A stopped program: the scrape ends within its budget and counts it. (Scrapes within a
        # second of the last collection's start get its figures.)
        time.sleep(1.1)
        stopped.send_signal(signal.SIGSTOP)
        start = time.monotonic()
        status, text = get(metrics_url)
        took = time.monotonic() - start
        check(took < BUDGET_MS / 1000 + 2, "a scrape with a stopped program took %.1f s" % took)
        check('vramshim_processes_skipped{uid="%d",reason="silent"} 1\n' % os.geteuid() in text,
              "the stopped program is not counted as silent:\n" + text)
        check('pid="%d"' % stopped.pid not in text, "the stopped program has series")
        check(all('pid="%d"' % pid in text for pid in expected), "a running program is missing")

        # 200 scrapers connect while the exporter cannot accept (stopped): the kernel queues every
        # one of them (a backlog of 5 refuses the 7th), and each is answered once it runs again.
        port = int(match.group(1))
        exporter.send_signal(signal.SIGSTOP)
        queued = []
        try:
            for _ in range(200):
                connection = socket.create_connection(("127.0.0.1", port), 2)
                connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                queued.append(connection)
        except OSError as error:
            check(False, "connection %d to the stopped exporter: %s" % (len(queued) + 1, error))
        finally:
            exporter.send_signal(signal.SIGCONT)
        answered = 0
        for connection in queued:
            with connection:
                connection.settimeout(30)
                reply = b""
                try:
                    while chunk := connection.recv(65536):
                        reply += chunk
                except OSError:
                    pass
                answered += reply.startswith(b"HTTP/1.1 200 ") and all(
                    b'pid="%d"' % pid in reply for pid in expected)
        check(answered == len(queued), "%d of %d queued scrapes answered" % (answered, len(queued)))

        # 200 scrapes at once, with malformed requests among them.
        answers = []
        lock = threading.Lock()

        waits = []

        def scrape():
            start = time.monotonic()
            try:
                result = get(metrics_url, timeout=120)
            except OSError as error:
                result = (0, str(error))
            with lock:
                answers.append(result)
                waits.append(time.monotonic() - start)

        def malformed(payload, hold=0):
            try:
                with socket.create_connection(("127.0.0.1", int(match.group(1))), 10) as bad:
                    bad.sendall(payload)
                    time.sleep(hold)
                    bad.settimeout(10)
                    bad.recv(4096)
            except OSError:
                pass

        threads = [threading.Thread(target=scrape) for _ in range(200)]
        threads += [threading.Thread(target=malformed, args=(payload,)) for payload in [
            b"\x00\xff garbage\r\n\r\n", b"GET /metrics HTTP/9.9\r\n\r\n",
            b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n",
            b"POST /metrics HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\nxx",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Long: " + b"b" * 200000 + b"\r\n\r\n"]]
        threads.append(threading.Thread(target=malformed, args=(b"GET /metr", 3)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        good = [text for status, text in answers
                if status == 200 and all('pid="%d"' % pid in text for pid in expected)]
        bad = [(status, text[-300:]) for status, text in answers
               if not (status == 200 and all('pid="%d"' % pid in text for pid in expected))]
        check(len(good) == 200, "%d of 200 concurrent scrapes answered in full; the others: %s"
              % (len(good), bad[:3]))
        # With the stopped program each collection takes the whole budget; a scrape queued behind
        # the others for a thread still answers within its own wait, counted from its arrival
        # (before: the last of the 200 took 7 s, one budget per batch of 32 ahead of it).
        check(max(waits) < BUDGET_MS / 1000 + 2.5,
              "the slowest of 200 concurrent scrapes took %.1f s" % max(waits))
        status, text = get(metrics_url)
        check(status == 200 and "vramshim_processes_answered 3\n" in text,
              "the exporter stopped serving after the storm")

        # Clients that never end their request: each is answered and closed once its head passes
        # 8 KiB (what it sends meanwhile is dropped unread, then it is reset), and the
        # exporter's memory stays where it was (cpp-httplib, before: 200 MiB of request line took
        # 200 MiB of resident memory, and the unit's MemoryMax is 256M).
        def resident_mib():
            with open("/proc/%d/status" % exporter.pid) as status_file:
                return next(int(line.split()[1]) // 1024 for line in status_file
                            if line.startswith("VmRSS:"))

        resident_before = resident_mib()
        for head, unit in [(b"GET /", b"a" * 65536),
                           (b"GET /metrics HTTP/1.1\r\n", b"X-A: " + b"b" * 1000 + b"\r\n"),
                           (b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                            b"10000\r\n" + b"c" * 65536 + b"\r\n")]:
            sent = 0
            cut = False
            try:
                with socket.create_connection(("127.0.0.1", port), 10) as flood:
                    flood.sendall(head)
                    while sent < 64 * MIB:
                        flood.sendall(unit)
                        sent += len(unit)
            except socket.timeout:
                pass  # the exporter stopped reading but kept the connection: not cut
            except OSError:
                cut = True
            check(cut and sent < 8 * MIB, "the exporter took %d bytes of one request (%r...)%s"
                  % (sent, head[:20], "" if cut else " and never closed it"))
        resident_after = resident_mib()
        check(resident_after <= resident_before + 16,
              "the exporter's resident memory grew from %d to %d MiB under endless requests"
              % (resident_before, resident_after))

        # Clients that connect and say nothing, more of them than it keeps connections (512): a scrape
        # still gets its answer at once (before: 64 of them held cpp-httplib's threads and a
        # scrape went unanswered for 10 s).
        silent = []
        try:
            for _ in range(600):
                silent.append(socket.create_connection(("127.0.0.1", port), 10))
                silent[-1].sendall(b"GET /metrics HTTP/1.1\r\n")
            start = time.monotonic()
            status, text = get(metrics_url, timeout=30)
            took = time.monotonic() - start
            check(status == 200 and took < BUDGET_MS / 1000 + 2,
                  "a scrape among 600 silent clients: status %d after %.1f s" % (status, took))
        finally:
            for connection in silent:
                connection.close()
        check(exporter.poll() is None, "the exporter ended")
        check(all(program.poll() is None for program in programs), "a program ended")
    finally:
        stopped.send_signal(signal.SIGCONT)
        for process in [prometheus, exporter, stopped] + programs:
            process.terminate()
        for process in [prometheus, exporter, stopped] + programs:
            process.wait(timeout=30)
    check(exporter.returncode == 0, "the exporter exited with %s on SIGTERM" % exporter.returncode)
    if failures:
        raise SystemExit("%d checks failed" % len(failures))
    print("exporter_test: all checks passed")


main()
