"""The native programs the wheel carries: the CLI in _native/bin/, the shim in _native/lib/."""

import os
import sys

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")
CLI = os.path.join(_ROOT, "bin", "vramshim")
SHIM = os.path.join(_ROOT, "lib", "libvramshim.so")


def main():
    """The `vramshim` console command: replaces this process with the CLI, passing argv on. The
    CLI finds the shim at ../lib/ beside itself, and its exit status is the command's."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(CLI, ["vramshim"] + sys.argv[1:])
    except OSError as error:
        sys.stderr.write("vramshim: cannot run %s: %s\n" % (CLI, error.strerror))
        sys.exit(1)
