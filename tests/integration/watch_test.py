"""`vramshim watch` against a program running under the shim (the simulated driver) whose one site
leaks 1 MiB per 20 ms step among churn, a warm-up and a bounded cache: under tmux, lines appear
naming the leak as the fastest-growing site, and watch ends by itself, with status 0, when the
program ends; in a pipe the same lines are plain text and end the same way; --once prints one such
line; a pid that is not a number or not positive is a usage error, a process not under the shim a
runtime error.
"""

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath("tests/support"))
from checks import check, failures, wait_for  # noqa: E402  (tests/support/checks.py)

CLI = os.path.abspath("analyzer/vramshim")
SHIM = os.path.abspath("shim/libvramshim.so")
FAKE_DRIVER_DIR = os.path.abspath("tests/fakecuda")
PROGRAM = os.path.abspath("tests/integration/programs/growing_sites")

# "12:00:01  in use 20.0 MiB  cached 4.0 MiB  growing: leak_one_mib_per_step +10.0 MiB (…/s)…"
LINE = re.compile(r"^\d\d:\d\d:\d\d  in use \d+(\.\d)? (B|KiB|MiB|GiB)  cached \d+(\.\d)? "
                  r"(B|KiB|MiB|GiB)  growing: (.*)$")
LEAK_FIRST = re.compile(r"^leak_one_mib_per_step\S* \+\d+\.\d MiB \(\d+\.\d MiB/s\)")


def growing_lines(text):
    """The watch lines in `text` whose fastest-growing site is the leak."""
    lines = []
    for line in text.splitlines():
        match = LINE.match(line)
        if match and LEAK_FIRST.match(match.group(5)):
            lines.append(line)
    return lines


def main():
    work = tempfile.mkdtemp(prefix="vw", dir="/tmp")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    env = dict(os.environ, XDG_RUNTIME_DIR=work, VRAMSHIM_REPORT=work + "/r.%p.json")
    shimmed = dict(env, LD_PRELOAD=SHIM, LD_LIBRARY_PATH=FAKE_DRIVER_DIR)

    def cli(*args):
        return subprocess.run([CLI] + list(args), env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)

    for bad in ("abc", "0", "-3"):
        result = cli("watch", bad, "--once")
        check(result.returncode == 2 and result.stderr.startswith("vramshim: watch: ")
              and len(result.stderr.splitlines()) == 1 and len(result.stderr) < 200,
              "watch %s: status %d, %r" % (bad, result.returncode, result.stderr))
    result = cli("watch", str(os.getpid()), "--once")
    check(result.returncode == 1 and result.stdout == "" and
          result.stderr == "vramshim: no vramshim socket for pid %d (is it running under "
          "vramshim?)\n" % os.getpid(),
          "watch of a process not under the shim: %d %r" % (result.returncode, result.stderr))

    program = subprocess.Popen([PROGRAM, "400"], env=shimmed, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    socket = "%s/vramshim/%d.sock" % (work, program.pid)
    wait_for("the program's socket", lambda: os.path.exists(socket))
    time.sleep(1.0)  # past the warm-up (20 steps) and the cache's filling (16), which also grow

    tmux = ["tmux", "-L", "vramshim-watch-test-%d" % os.getpid()]
    subprocess.run(tmux + ["new-session", "-d", "-x", "200", "-y", "50", "-s", "watch",
                           "env", "XDG_RUNTIME_DIR=" + work, "sh", "-c",
                           '"$0" watch %d --interval 0.5; echo "watch exited $?"; sleep 600'
                           % program.pid, CLI], check=True)
    piped = subprocess.Popen([CLI, "watch", str(program.pid), "--interval", "0.3"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)

    def screen(*flags):
        return subprocess.run(tmux + ["capture-pane", "-p", "-t", "watch"] + list(flags),
                              capture_output=True, text=True).stdout

    try:
        once = cli("watch", str(program.pid), "--once", "--interval", "0.5")
        check(once.returncode == 0 and len(once.stdout.splitlines()) == 1 and
              len(growing_lines(once.stdout)) == 1 and "\x1b" not in once.stdout,
              "watch --once in a pipe: %d %r %r" % (once.returncode, once.stdout, once.stderr))

        wait_for("two lines on the screen naming the leak first",
                 lambda: len(growing_lines(screen())) >= 2)
        wait_for("watch to end with the program", lambda: "watch exited" in screen(), 60)
        program.wait(timeout=30)
        text = screen()
        check("pid %d ended" % program.pid in text and "watch exited 0" in text,
              "watch did not say the program ended, or did not exit 0:\n" + text)
        check("\x1b[1m" in screen("-e"), "no bold time on the terminal:\n" + screen("-e"))

        out, err = piped.communicate(timeout=30)
        lines = out.splitlines()
        check(piped.returncode == 0, "watch in a pipe: status %d, %r" % (piped.returncode, err))
        check("\x1b" not in out, "terminal control codes in a pipe: %r" % out)
        check(lines and lines[-1].endswith("  pid %d ended" % program.pid),
              "the piped watch's last line: %r" % lines[-1:])
        check(all(LINE.match(line) for line in lines[:-1]),
              "a piped line not in the watch format:\n" + out)
        check(len(growing_lines(out)) >= 3, "few piped lines name the leak first:\n" + out)
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
        if program.poll() is None:
            program.kill()
            program.wait()
        if piped.poll() is None:
            piped.kill()
            piped.wait()
    if failures:
        raise SystemExit("%d checks failed" % len(failures))
    print("watch_test: all checks passed")


main()
