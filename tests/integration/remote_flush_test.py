"""`vramshim flush --deep PID` on processes started without the shim (PEP 768, sys.remote_exec):

- a Python older than 3.14, a program that runs no Python: exit 1, one line saying why (after why
  there is no shim socket); without --deep, no remote execution is tried;
- a Python 3.14 whose executable is gone, with no python3.14 on PATH: "no Python 3.14 or newer is
  found"; a "3.14" executable that lacks sys.remote_exec: the interpreter's own refusal;
- a real Python 3.14 (its own executable, or python3.14 on PATH, or one that
  tools/install-sid-pythons.sh installed) holding a fake torch: its empty_cache() is called, exit 0,
  and the output says there was no pool to flush. Skipped, saying so, where no 3.14 is installed.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath("tests/support"))
from checks import check, finish  # noqa: E402  (tests/support/checks.py)

CLI = os.path.abspath("analyzer/vramshim")
MiB = 1 << 20

# Waits until the fake torch's cache is emptied, running bytecode all the while (a process runs a
# remote script at its next bytecode), then says so.
TARGET = r"""
import sys, time, types
torch = types.ModuleType("torch")
torch.cuda = types.ModuleType("torch.cuda")
cache = [24 << 20]
torch.cuda.is_initialized = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.memory_reserved = lambda device=None: cache[0]
def empty_cache():
    cache[0] = 0
torch.cuda.empty_cache = empty_cache
sys.modules["torch"], sys.modules["torch.cuda"] = torch, torch.cuda
print("ready", flush=True)
deadline = time.time() + 60
while cache[0] and time.time() < deadline:
    time.sleep(0.05)
print("emptied" if not cache[0] else "not emptied", flush=True)
"""


def start(argv, **kwargs):
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               **kwargs)
    if "sleep" not in argv[0]:
        check(process.stdout.readline().strip() == "ready", "%s did not start" % argv[0])
    return process


def flush(pid, *options, path=None):
    environment = dict(os.environ)
    if path is not None:
        environment["PATH"] = path
    result = subprocess.run([CLI, "flush"] + list(options) + [str(pid)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, timeout=60, env=environment)
    return result.returncode, result.stdout, result.stderr


def one_line(text):
    return text.count("\n") == 1 and text.startswith("vramshim: ")


def check_refused(process, pattern, what, path=None):
    status, out, err = flush(process.pid, "--deep", path=path)
    check(status == 1 and one_line(err) and re.search(pattern, err) is not None,
          "%s: flush --deep exited %d: %r %r" % (what, status, out, err))
    check("no vramshim socket for pid %d" % process.pid in err, "%s: %r" % (what, err))


def python_3_14():
    candidates = [shutil.which("python3.14")] + sorted(glob.glob("/root/.pyenv/versions/3.14*/bin/python3"))
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "import sys; sys.remote_exec"],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


def main():
    work = tempfile.mkdtemp(prefix="vramshim-remote-flush-", dir="/tmp")
    processes = []
    try:
        older = start(["/usr/bin/python3", "-c", TARGET])
        processes.append(older)
        version = "%d.%d" % sys.version_info[:2]
        check_refused(older, r"runs Python %s: .*needs Python 3\.14 or newer" % re.escape(version),
                      "Python " + version)
        status, out, err = flush(older.pid)
        check(status == 1 and one_line(err) and "3.14" not in err,
              "flush without --deep tries more than the socket: %r" % err)

        sleeper = start(["/bin/sleep", "60"])
        processes.append(sleeper)
        check_refused(sleeper, r"runs no Python", "sleep")

        # A "python3.14" that is Python 3.11 underneath: its version by name, its refusal its own.
        impostor = os.path.join(work, "python3.14")
        shutil.copy("/usr/bin/python3.11", impostor)
        lacking = start([impostor, "-c", TARGET])
        processes.append(lacking)
        check_refused(lacking, r"could not hand it the release \(sys\.remote_exec\): 3\.11 has no "
                      r"sys\.remote_exec", "a 3.14 without sys.remote_exec")
        # Its executable gone, and none on PATH: nothing to run sys.remote_exec from.
        os.unlink(impostor)
        if not any(os.path.exists(os.path.join(d, "python3.%d" % m)) for d in ("/usr/bin", "/bin")
                   for m in range(14, 24)):
            check_refused(lacking, r"runs Python 3\.14, but no Python 3\.14 or newer is found",
                          "no 3.14 interpreter", path="/usr/bin:/bin")
            # Nor one planted where root does not trust it: in a relative PATH entry (here: the
            # current directory), or, for root, in a directory other users may write to.
            planted = os.path.join(work, "planted")
            os.makedirs(planted)
            marker = os.path.join(work, "planted-python-ran")
            with open(os.path.join(planted, "python3.14"), "w") as script:
                script.write("#!/bin/sh\ntouch %s\nexit 1\n" % marker)
            os.chmod(os.path.join(planted, "python3.14"), 0o755)
            os.chmod(planted, 0o777)
            for path in ["planted:/usr/bin:/bin", ":/usr/bin:/bin"] + (
                    [planted + ":/usr/bin:/bin"] if os.geteuid() == 0 else []):
                subprocess.run([CLI, "flush", "--deep", str(lacking.pid)], capture_output=True,
                               timeout=60, cwd=work if path.startswith("planted") else planted,
                               env=dict(os.environ, PATH=path))
                check(not os.path.exists(marker),
                      "flush --deep ran a python3.14 planted in PATH=%s" % path)

        python = python_3_14()
        if python is None:
            print("SKIP: the real sys.remote_exec check: no Python 3.14 with sys.remote_exec here "
                  "(python3.14 on PATH or tools/install-sid-pythons.sh)")
        else:
            target = start([python, "-c", TARGET])
            processes.append(target)
            status, out, err = flush(target.pid, "--deep")
            check(status == 0 and "%d: torch.cuda.empty_cache ran, released 24.0 MiB" % target.pid in out
                  and "no pool to flush" in out, "flush --deep of Python 3.14: %d %r %r" % (status, out, err))
            check(target.stdout.readline().strip() == "emptied", "the 3.14 target's cache was not emptied")
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)
    finish("remote_flush_test")


if __name__ == "__main__":
    main()
