"""The wheel (//:wheel) as pip and a user meet it:

- its name, WHEEL, METADATA and entry points; RECORD lists every file with its sha256 and size;
- the bundled programs load nothing from the host but glibc and the C++ runtime, and need no glibc
  newer than the 2.36 of the manylinux_2_36 tag;
- `pip install --no-index` into a fresh venv puts `vramshim` on the venv's PATH: `vramshim run` of a
  program against the simulated driver (the shim found inside the package), the program's exit
  status passed through, `python -m vramshim version`;
- `import vramshim` in a program run under the shim: stats(), flush(), flush(deep=True) and
  snapshot() on its own shim (shimmed_python.py); outside the shim, NotUnderShim; a socket that is
  a link, or served by another process, is refused.
"""

import base64
import csv
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.abspath("tests/support"))
from checks import check, finish  # noqa: E402  (tests/support/checks.py)

VERSION = open("VERSION").read().strip()
WHEELHOUSE = os.path.abspath("packaging/wheelhouse")
PROGRAM = os.path.abspath("tests/integration/programs/attribution_app")
FAKE_DRIVER_DIR = os.path.abspath("tests/fakecuda")
SHIMMED_PYTHON = os.path.abspath("tests/packaging/shimmed_python.py")
HOST_LIBRARIES = re.compile(r"^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|"
                            r"libstdc\+\+\.so\.6|libgcc_s\.so\.1)$")


def run(argv, **kwargs):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120, **kwargs)


def check_archive(wheel):
    name = os.path.basename(wheel)
    check(name == "vramshim-%s-py3-none-manylinux_2_36_x86_64.whl" % VERSION, "wheel named " + name)
    dist_info = "vramshim-%s.dist-info" % VERSION
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        check(names[-1] == dist_info + "/RECORD", "RECORD is not the last entry: " + names[-1])
        wheel_file = archive.read(dist_info + "/WHEEL").decode()
        for line in ("Wheel-Version: 1.0", "Root-Is-Purelib: false",
                     "Tag: py3-none-manylinux_2_36_x86_64"):
            check(line in wheel_file.splitlines(), "WHEEL lacks " + line)
        metadata = archive.read(dist_info + "/METADATA").decode()
        check("Name: vramshim\n" in metadata and "Version: %s\n" % VERSION in metadata,
              "METADATA names no vramshim " + VERSION)
        check("vramshim = vramshim._native:main" in archive.read(dist_info + "/entry_points.txt").decode(),
              "entry_points.txt has no vramshim console script")
        rows = list(csv.reader(io.StringIO(archive.read(dist_info + "/RECORD").decode())))
        recorded = {row[0]: row[1:] for row in rows}
        check(set(recorded) == set(names), "RECORD lists %s, the archive holds %s" % (
            sorted(set(recorded) ^ set(names)), "the others"))
        for entry in names:
            if entry == dist_info + "/RECORD":
                check(recorded.get(entry) == ["", ""], "RECORD lists itself with a hash")
                continue
            data = archive.read(entry)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            check(recorded.get(entry) == ["sha256=" + digest, str(len(data))],
                  "RECORD's hash or size of %s is wrong" % entry)
        mode = archive.getinfo("vramshim/_native/bin/vramshim").external_attr >> 16
        check(mode & 0o111 == 0o111, "the CLI is stored with mode %o, not executable" % mode)


def check_self_contained(package):
    elves = glob.glob(os.path.join(package, "_native", "bin", "*")) + \
        glob.glob(os.path.join(package, "_native", "lib", "*.so")) + \
        glob.glob(os.path.join(package, "_native", "lib", "vramshim", "*"))
    check(len(elves) > 3, "the installed package has no native programs: %s" % elves)
    bundled = os.path.join(package, "_native", "lib", "vramshim")
    environment = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    newest = (0, 0)
    for elf in elves:
        loads = run(["ldd", elf], env=environment).stdout
        check("not found" not in loads, "%s misses libraries: %s" % (elf, loads))
        for line in loads.splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[1] == "=>" and not HOST_LIBRARIES.match(fields[0]):
                check(os.path.realpath(fields[2]) == os.path.join(bundled, fields[0]),
                      "%s loads %s from %s, not from the wheel" % (elf, fields[0], fields[2]))
        for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", run(["objdump", "-T", elf]).stdout):
            newest = max(newest, (int(major), int(minor)))
    check(newest <= (2, 36), "the wheel needs glibc %d.%d, newer than its tag's 2.36" % newest)


def check_installed(venv, work):
    bin_dir = os.path.join(venv, "bin")
    environment = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"])
    environment.pop("VRAMSHIM_LIB", None)
    package = run([os.path.join(bin_dir, "python"), "-c",
                   "import os, vramshim; print(os.path.dirname(vramshim.__file__))"],
                  env=environment).stdout.strip()
    check(package.startswith(venv), "vramshim imports from %s, not the venv" % package)
    check(shutil.which("vramshim", path=environment["PATH"]) == os.path.join(bin_dir, "vramshim"),
          "vramshim is not on the venv's PATH")
    check_self_contained(package)

    version = run(["vramshim", "version"], env=environment, cwd=work)
    check(version.returncode == 0 and VERSION in version.stdout, "vramshim version: " + version.stdout)
    module = run(["python", "-m", "vramshim", "version"], env=environment, cwd=work)
    check(module.returncode == 0 and module.stdout == version.stdout,
          "python -m vramshim version: %s" % module.stdout)
    usage = run(["python", "-m", "vramshim", "frobnicate"], env=environment, cwd=work)
    check(usage.returncode == 2 and usage.stdout.startswith("vramshim:"),
          "python -m vramshim frobnicate exited %d: %s" % (usage.returncode, usage.stdout))

    # The shim comes from the installed package, found by the CLI at ../lib/.
    preload = run(["vramshim", "run", "--report", "off", "sh", "-c", 'echo "$LD_PRELOAD"'],
                  env=environment, cwd=work)
    check(preload.stdout.strip() == os.path.join(package, "_native", "lib", "libvramshim.so"),
          "vramshim run preloads %s" % preload.stdout)
    status = run(["vramshim", "run", "--report", "off", "sh", "-c", "exit 7"], env=environment, cwd=work)
    check(status.returncode == 7, "vramshim run of 'exit 7' exited %d" % status.returncode)

    shimmed = dict(environment, LD_LIBRARY_PATH=FAKE_DRIVER_DIR)
    summary = run(["vramshim", "run", "--report", os.path.join(work, "run.%p.json"), PROGRAM, "linked"],
                  env=shimmed, cwd=work)
    check(summary.returncode == 0 and "leak_three_blocks" in summary.stdout,
          "vramshim run of attribution_app: rc %d: %s" % (summary.returncode, summary.stdout))
    check(len(glob.glob(os.path.join(work, "run.*.json"))) == 1, "vramshim run wrote no report")

    # The Python calls, on the shim of the program they run in.
    report = os.path.join(work, "snapshot.json")
    calls = run(["vramshim", "run", "--report", "off", "python", SHIMMED_PYTHON, report],
                env=shimmed, cwd=work)
    print(calls.stdout)
    check(calls.returncode == 0 and "FAIL" not in calls.stdout,
          "the Python calls under the shim: rc %d" % calls.returncode)
    check_outside_the_shim(environment, work)


OUTSIDE = r"""
import os, socket, sys, vramshim
try:
    vramshim.flush()
    print("no error")
except vramshim.NotUnderShim as error:
    print("NotUnderShim:", error)
# A link where this process's socket would be is not followed.
directory = "/tmp/vramshim-%d" % os.geteuid()
os.makedirs(directory, mode=0o700, exist_ok=True)
os.chmod(directory, 0o700)
path = os.path.join(directory, "%d.sock" % os.getpid())
os.symlink("/dev/null", path)
try:
    vramshim.stats()
    print("link: no error")
except vramshim.ShimError as error:
    print("link:", type(error).__name__, error)
os.unlink(path)
# A socket at that name served by another process is not trusted.
ready = os.pipe()
sys.stdout.flush()
server = os.fork()
if server == 0:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    os.write(ready[1], b"x")
    connection, _ = listener.accept()
    connection.recv(1)  # until the client hangs up
    os._exit(0)
os.read(ready[0], 1)
try:
    vramshim.stats()
    print("impostor: no error")
except vramshim.ShimError as error:
    print("impostor:", type(error).__name__, error)
finally:
    os.unlink(path)
    os.waitpid(server, 0)
"""


def check_outside_the_shim(environment, work):
    outside = run(["python", "-c", OUTSIDE], env=environment, cwd=work).stdout
    print(outside)
    check("NotUnderShim: pid" in outside and "is not running under the vramshim shim" in outside,
          "flush() outside the shim: " + outside)
    check(re.search(r"^link: ShimError .*\.sock is not a socket", outside, re.M) is not None,
          "a link at the socket's name: " + outside)
    check(re.search(r"^impostor: ShimError .*is served by pid \d+ .*not by this process", outside, re.M)
          is not None, "a socket served by another process: " + outside)


def main():
    wheels = glob.glob(os.path.join(WHEELHOUSE, "*.whl"))
    if len(wheels) != 1:
        sys.exit("FAIL: %s holds %s, not one wheel" % (WHEELHOUSE, wheels))
    check_archive(wheels[0])
    work = tempfile.mkdtemp(prefix="vramshim-wheel-", dir="/tmp")
    try:
        venv = os.path.join(work, "venv")
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True, timeout=300)
        install = run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-index",
                       "--no-cache-dir", "--disable-pip-version-check", wheels[0]])
        check(install.returncode == 0, "pip install: " + install.stdout)
        if install.returncode == 0:
            check_installed(venv, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish("wheel_test")


if __name__ == "__main__":
    main()
