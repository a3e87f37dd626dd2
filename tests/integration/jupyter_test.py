"""`vramshim jupyter install` and its kernel, started by jupyter_client as a notebook server would
(Debian's python3-jupyter-client and python3-ipykernel, tools/bootstrap.sh):

- the kernelspec: argv runs the given Python's ipykernel_launcher, env preloads this vramshim's
  shim with the options as VRAMSHIM_*; --prefix puts it under PREFIX/share/jupyter/kernels; a bad
  name or --user with --prefix is a usage error (2), a Python that is missing or has no ipykernel
  a runtime error (1), each with one line;
- the kernel, started from it: a cell allocates through the simulated driver; `vramshim ps` lists
  the kernel's own pid, `vramshim flush PID` empties its pool, `vramshim flush --deep PID` empties a
  fake torch's cache in it; an interrupt reaches the cell; at shutdown it writes its report.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath("tests/support"))
from checks import check, failures, finish  # noqa: E402  (tests/support/checks.py)

CLI = os.path.abspath("analyzer/vramshim")
SHIM = os.path.realpath("shim/libvramshim.so")
FAKE_DRIVER_DIR = os.path.abspath("tests/fakecuda")
PYTHON = "/usr/bin/python3"
KERNEL = "vramshim-test"


def vramshim(*arguments):
    result = subprocess.run([CLI] + list(arguments), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, timeout=120)
    return result.returncode, result.stdout, result.stderr


def check_install(work):
    report = os.path.join(work, "kernel.%p.json")
    status, out, err = vramshim("jupyter", "install", "--name", KERNEL, "--python", PYTHON,
                                "--report", report, "--limit", "1G")
    check(status == 0, "jupyter install exited %d: %s" % (status, err))
    path = os.path.join(os.environ["JUPYTER_DATA_DIR"], "kernels", KERNEL, "kernel.json")
    check(path in out or os.path.dirname(path) in out, "jupyter install does not say where: " + out)
    with open(path) as spec_file:
        spec = json.load(spec_file)
    check(spec["argv"] == [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
          "the kernel's argv: %s" % spec["argv"])
    check(spec["env"] == {"LD_PRELOAD": SHIM, "VRAMSHIM_REPORT": report, "VRAMSHIM_LIMIT": "1G"},
          "the kernel's env: %s" % spec["env"])
    check(spec["language"] == "python" and spec["display_name"] == "Python 3 (vramshim)",
          "the kernel's language and display name: %s" % spec)

    prefix = os.path.join(work, "prefix")
    status, _, err = vramshim("jupyter", "install", "--prefix", prefix, "--python", PYTHON)
    check(status == 0 and os.path.isfile(
        os.path.join(prefix, "share", "jupyter", "kernels", "vramshim", "kernel.json")),
        "jupyter install --prefix: %d %s" % (status, err))

    def one_line_error(arguments, expected_status, pattern):
        status, out, err = vramshim("jupyter", *arguments)
        check(status == expected_status and re.fullmatch(r"vramshim: [^\n]*" + pattern + r"[^\n]*\n",
                                                         err) is not None,
              "vramshim jupyter %s: exit %d, %r" % (" ".join(arguments), status, err))

    one_line_error(["install", "--name", "no spaces"], 2, "not a kernel name")
    one_line_error(["install", "--user", "--prefix", prefix], 2, "excludes")
    one_line_error(["uninstall"], 2, "install")
    one_line_error(["install", "--python", os.path.join(work, "nowhere", "python3")], 1,
                   "not an executable file")
    no_ipykernel = os.path.join(work, "python-without-ipykernel")
    with open(no_ipykernel, "w") as script:
        script.write("#!/bin/sh\nexit 1\n")
    os.chmod(no_ipykernel, 0o755)
    one_line_error(["install", "--python", no_ipykernel], 1, "cannot import ipykernel")
    one_line_error(["install", "--python", PYTHON, "--limit", "lots"], 2, "is not a size")
    one_line_error(["install", "--python", PYTHON, "--limit", "0"], 2, "is not a size above 0")

    # Run where another user could plant modules (root installs system kernelspecs): the check
    # that the Python has ipykernel imports nothing from the current directory.
    planted = os.path.join(work, "planted")
    os.makedirs(planted)
    marker = os.path.join(work, "planted-module-ran")
    with open(os.path.join(planted, "ipykernel_launcher.py"), "w") as module:
        module.write("open(%r, 'w').close()\n" % marker)
    result = subprocess.run([CLI, "jupyter", "install", "--prefix", os.path.join(work, "p2"),
                             "--python", PYTHON], cwd=planted, capture_output=True, text=True,
                            timeout=120)
    check(result.returncode == 0 and not os.path.exists(marker),
          "jupyter install run in a directory with a planted ipykernel_launcher.py: exit %d, "
          "the planted module %s" % (result.returncode,
                                     "ran" if os.path.exists(marker) else "did not run"))

    # Root takes the kernel's python3 from PATH only where no other user could have put it: one
    # planted in a directory others may write to is passed over for the next one on PATH.
    if os.geteuid() == 0:
        shared = os.path.join(work, "shared-bin")
        os.makedirs(shared)
        os.chmod(shared, 0o777)
        ran = os.path.join(work, "planted-python-ran")
        with open(os.path.join(shared, "python3"), "w") as script:
            script.write("#!/bin/sh\ntouch %s\nexit 0\n" % ran)
        os.chmod(os.path.join(shared, "python3"), 0o755)
        # Then a link there to the system's python3: the kernel would run whatever it is pointed
        # to later, by that name.
        for planted_kind in ("script", "link"):
            if planted_kind == "link":
                os.unlink(os.path.join(shared, "python3"))
                os.symlink(PYTHON, os.path.join(shared, "python3"))
            prefix3 = os.path.join(work, "p3-" + planted_kind)
            result = subprocess.run([CLI, "jupyter", "install", "--prefix", prefix3],
                                    capture_output=True, text=True, timeout=120,
                                    env=dict(os.environ, PATH=shared + ":" + os.path.dirname(PYTHON)))
            spec_path = os.path.join(prefix3, "share", "jupyter", "kernels", "vramshim",
                                     "kernel.json")
            argv = json.load(open(spec_path))["argv"] if os.path.exists(spec_path) else None
            check(result.returncode == 0 and not os.path.exists(ran) and argv is not None
                  and argv[0] == PYTHON,
                  "jupyter install as root with a python3 %s planted first on PATH: exit %d %r, "
                  "the planted one %s, the kernel runs %s" % (
                      planted_kind, result.returncode, result.stderr,
                      "ran" if os.path.exists(ran) else "did not run", argv and argv[0]))


CELL = r"""
import ctypes, os, sys, types
driver = ctypes.CDLL("libcuda.so.1")
assert driver.cuInit(0) == 0
context = ctypes.c_void_p()
assert driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0) == 0
assert driver.cuCtxSetCurrent(context) == 0
held = ctypes.c_uint64()
assert driver.cuMemAlloc_v2(ctypes.byref(held), ctypes.c_size_t(3 << 20)) == 0
# Each larger than a pool segment, so a segment of its own: 32 MiB freed into the pool, what
# `vramshim flush` gives back, and 24 MiB in the cache of a torch, what `vramshim flush --deep` asks
# it to let go.
freed = ctypes.c_uint64()
assert driver.cuMemAlloc_v2(ctypes.byref(freed), ctypes.c_size_t(32 << 20)) == 0
cached = ctypes.c_uint64()
assert driver.cuMemAlloc_v2(ctypes.byref(cached), ctypes.c_size_t(24 << 20)) == 0
assert driver.cuMemFree_v2(freed) == 0
torch = types.ModuleType("torch")
torch.cuda = types.ModuleType("torch.cuda")
torch_cache = []
def empty_cache():
    while torch_cache:
        driver.cuMemFree_v2(torch_cache.pop())
torch.cuda.is_initialized = lambda: True
torch.cuda.empty_cache = empty_cache
sys.modules["torch"], sys.modules["torch.cuda"] = torch, torch.cuda
torch_cache.append(cached)
print("kernel pid", os.getpid(), "LD_PRELOAD", os.environ.get("LD_PRELOAD"))
"""


def run_cell(client, code):
    printed = []

    def output(message):
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            printed.append("\n".join(message["content"]["traceback"]))

    reply = client.execute_interactive(code, timeout=60, output_hook=output)
    return reply["content"], "".join(printed)


def check_kernel(work):
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name=KERNEL)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        reply, printed = run_cell(client, CELL)
        check(reply["status"] == "ok", "the cell failed: %s" % printed)
        found = re.search(r"kernel pid (\d+) LD_PRELOAD (\S+)", printed)
        if not found:
            check(False, "the cell printed: " + printed)
            return
        pid = found.group(1)
        check(found.group(2) == SHIM, "the kernel preloads %s" % found.group(2))
        check(str(manager.provisioner.pid) == pid,
              "the kernel's pid %s is not the one Jupyter started (%s)" % (pid, manager.provisioner.pid))

        status, out, err = vramshim("ps")
        check(status == 0 and re.search(r"^\s*%s\b" % pid, out, re.M) is not None,
              "vramshim ps does not list the kernel's pid %s: %s %s" % (pid, out, err))
        status, out, err = vramshim("flush", pid)
        check(status == 0 and "%s: released 32.0 MiB" % pid in out,
              "vramshim flush %s: %d %s %s" % (pid, status, out, err))
        status, out, err = vramshim("flush", "--deep", pid)
        check(status == 0 and "%s: torch.cuda.empty_cache ran" % pid in out,
              "vramshim flush --deep %s: %d %s %s" % (pid, status, out, err))
        reply, printed = run_cell(client, "print('torch holds', len(torch_cache))")
        check("torch holds 0" in printed, "after flush --deep, the cell sees: %s" % printed)

        # An interrupt (SIGINT to the kernel Jupyter started) reaches the running cell.
        client.execute("import time\ntime.sleep(60)")
        time.sleep(1)
        manager.interrupt_kernel()
        deadline = time.time() + 30
        interrupted = None
        while time.time() < deadline and interrupted is None:
            message = client.get_shell_msg(timeout=30)
            if message["msg_type"] == "execute_reply":
                interrupted = message["content"]
        check(interrupted is not None and interrupted.get("ename") == "KeyboardInterrupt",
              "the interrupted cell's reply: %s" % interrupted)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
    report = os.path.join(work, "kernel.%s.json" % pid)
    check(os.path.isfile(report), "the kernel wrote no report at shutdown (%s)" % os.listdir(work))


def main():
    work = tempfile.mkdtemp(prefix="vramshim-jupyter-", dir="/tmp")
    # Jupyter's and IPython's files in the test's own directory, not the user's.
    for variable, name in (("JUPYTER_DATA_DIR", "data"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                           ("JUPYTER_CONFIG_DIR", "config"), ("IPYTHONDIR", "ipython")):
        os.environ[variable] = os.path.join(work, name)
    os.environ["JUPYTER_PATH"] = os.environ["JUPYTER_DATA_DIR"]
    # The kernel's control socket too, not in the shared /tmp/vramshim-UID other tests scan.
    os.environ["XDG_RUNTIME_DIR"] = work
    os.environ["LD_LIBRARY_PATH"] = FAKE_DRIVER_DIR
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # ipykernel's debugger's notice, on stderr
    try:
        check_install(work)
        if not failures:
            check_kernel(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish("jupyter_test")


if __name__ == "__main__":
    main()
