"""`vramshim top` under tmux, against programs running under the shim (the simulated driver):
the table shows two running programs; the flush key releases the selected one's cache, and only
its; a stopped program is marked as not answering; a program that exits leaves the table; q
quits. Without a terminal, or on one that cannot show the full screen, `top` prints one plain
table.
"""

import atexit
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath("tests/support"))
from checks import check, failures, wait_for  # noqa: E402  (tests/support/checks.py)

CLI = os.path.abspath("analyzer/vramshim")
SHIM = os.path.abspath("shim/libvramshim.so")
FAKE_DRIVER_DIR = os.path.abspath("tests/fakecuda")
PROGRAM = os.path.abspath("tests/integration/programs/cached_idle")
MIB = 1 << 20
TABLE_HEADER = "     PID  RANK  DEV           BUS ID     IN USE"


def on_terminal(command, env, term):
    """Runs `command` with a pseudo-terminal as its standard input and output and TERM=`term`
    (unset when None): its exit status, what it wrote on the terminal, and its standard error."""
    env = dict(env)
    env.pop("TERM", None)
    if term is not None:
        env["TERM"] = term
    controller, terminal = os.openpty()
    process = subprocess.Popen(command, env=env, stdin=terminal, stdout=terminal,
                               stderr=subprocess.PIPE, text=True)
    os.close(terminal)
    shown = b""
    deadline = time.time() + 20  # a full screen would run until q
    while time.time() < deadline:
        if not select.select([controller], [], [], 0.1)[0]:
            continue
        try:
            data = os.read(controller, 65536)
        except OSError:  # EIO: every process closed the terminal
            break
        if not data:
            break
        shown += data
    os.close(controller)
    if process.poll() is None:
        process.kill()
    errors = process.stderr.read()
    return process.wait(timeout=30), shown.decode().replace("\r\n", "\n"), errors


def main():
    work = tempfile.mkdtemp(prefix="vt", dir="/tmp")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    socket_dir = work + "/vramshim"
    env = dict(os.environ, XDG_RUNTIME_DIR=work, VRAMSHIM_REPORT=work + "/r.%p.json")
    shimmed = dict(env, LD_PRELOAD=SHIM, LD_LIBRARY_PATH=FAKE_DRIVER_DIR)
    programs = []
    for blocks in (4, 8):
        program = subprocess.Popen([PROGRAM, "cache", str(blocks), str(MIB)], env=shimmed,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        check(program.stdout.readline() == "ready\n", "a program did not start")
        programs.append(program)

    def cached(pid):
        stats = subprocess.run([CLI, "stats", str(pid), "--json"], env=env, capture_output=True,
                               text=True)
        return json.loads(stats.stdout)["devices"][0]["cached_bytes"]

    once = subprocess.run([CLI, "top", "--dir", socket_dir], env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    check(once.returncode == 0 and once.stdout.startswith(TABLE_HEADER),
          "top without a terminal: %s %s" % (once.stdout, once.stderr))
    check(all(re.search(r"^ *%d .*  cached_idle cache" % p.pid, once.stdout, re.M)
              for p in programs), "top --once lacks a program:\n" + once.stdout)

    # On a terminal that cannot show the full screen (no terminfo entry, no cursor addressing,
    # TERM unset): one line saying why, the plain table, exit status 0 (ncurses' initscr() exited
    # with status 1, "Error opening terminal: xterm-ghostty.").
    for term, why in (("xterm-ghostty", "TERM=xterm-ghostty has no terminfo entry here"),
                      ("dumb", "TERM=dumb cannot move the cursor (its terminfo entry has no cup)"),
                      (None, "TERM is not set")):
        status, shown, errors = on_terminal([CLI, "top", "--dir", socket_dir], env, term)
        check(status == 0 and shown.startswith(TABLE_HEADER) and
              errors == "vramshim: top: %s; printing one table, as top --once does\n" % why,
              "top with TERM=%s: status %s, screen %r, stderr %r" % (term, status, shown, errors))

    tmux = ["tmux", "-L", "vramshim-top-test-%d" % os.getpid()]
    subprocess.run(tmux + ["new-session", "-d", "-x", "180", "-y", "40", "-s", "top",
                           "env", "XDG_RUNTIME_DIR=" + work, "VRAMSHIM_REPORT=off", CLI, "top",
                           "--dir", socket_dir, "--interval", "0.5"], check=True)

    def screen():
        return subprocess.run(tmux + ["capture-pane", "-p", "-t", "top"], capture_output=True,
                              text=True).stdout

    def row_of(pid, text):
        return re.search(r"^ *%d .*$" % pid, text, re.M)

    try:
        # The whole frame: a capture may fall between the rows and the help line being drawn.
        text = wait_for("both programs and the help line on the screen",
                        lambda: (lambda t: t if all(row_of(p.pid, t) for p in programs) and
                                 "f flush" in t and "q quit" in t else None)(screen()))
        check(text is not None, "no help line")
        # The first row is the selected one; its cache, and only its, is released by f.
        rows = re.findall(r"^ *(\d+) +\S+ +0 ", text or "", re.M)
        selected = int(rows[0]) if rows else programs[0].pid
        other = [p.pid for p in programs if p.pid != selected][0]
        other_cached = cached(other)
        check(cached(selected) > 0 and other_cached > 0, "nothing cached before the flush")
        subprocess.run(tmux + ["send-keys", "-t", "top", "f"], check=True)
        wait_for("the selected program's cache released", lambda: cached(selected) == 0)
        check(cached(other) == other_cached, "the flush reached the other program")
        wait_for("the status line", lambda: "pid %d: flush released" % selected in screen())
        check("top sites of pid %d" % selected in screen(), "no sites of the selected program")

        stopped = [p for p in programs if p.pid == other][0]
        stopped.send_signal(signal.SIGSTOP)
        wait_for("the stopped program marked",
                 lambda: (lambda r: r and "(not answering)" in r.group(0))(row_of(other, screen())))
        stopped.send_signal(signal.SIGCONT)
        stopped.terminate()
        stopped.wait(timeout=30)
        wait_for("the ended program gone from the table", lambda: not row_of(other, screen()))
        check(row_of(selected, screen()) is not None, "the running program left the table")

        subprocess.run(tmux + ["send-keys", "-t", "top", "q"], check=True)
        wait_for("top to quit", lambda: subprocess.run(
            tmux + ["has-session", "-t", "top"], capture_output=True).returncode != 0)
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
        for program in programs:
            program.send_signal(signal.SIGCONT)
            program.terminate()
            program.wait(timeout=30)
    if failures:
        raise SystemExit("%d checks failed" % len(failures))
    print("top_test: all checks passed")


main()
