"""The Python package finds its own process's socket where the shim put it when another user made
/tmp/vramshim-UID first: in a directory /tmp/vramshim-UID.XXXXXX of its own (mkdtemp), as the CLI
does; a look-alike directory of another user is not trusted. Needs root, to act as two users.
"""

import ctypes
import importlib.util
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.abspath("tests/support"))
from checks import check, finish  # noqa: E402  (tests/support/checks.py)

SQUATTER = 65534  # nobody


def load_control():
    spec = importlib.util.spec_from_file_location(
        "vramshim_control", "packaging/python/vramshim/_control.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Loaded as root: the other user may not read the runfiles.
CONTROL = load_control()


def serve(listener):
    """Answers every request on `listener` as a shim answers `stats`."""
    while True:
        connection, _ = listener.accept()
        with connection:
            connection.recv(4096)
            connection.sendall(b'{"ok":true,"devices":[{"device":0,"in_use_bytes":4711}]}\n')


def as_user(uid, go, report):
    """In a child of `uid`, once `go` is readable: this process's socket in a directory of its own,
    as the shim makes it, then vramshim.stats(); what it gave, or the error, goes to `report`."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.read(go, 1)
    directory = ctypes.CDLL(None, use_errno=True).mkdtemp
    directory.restype = ctypes.c_char_p
    own = directory(("/tmp/vramshim-%d.XXXXXX" % uid).encode()).decode()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind("%s/%d.sock" % (own, os.getpid()))
    listener.listen(8)
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    try:
        answer = repr(CONTROL.stats())
    except Exception as error:  # what the check reports
        answer = "%s: %s" % (type(error).__name__, error)
    os.write(report, answer.encode())
    os.unlink("%s/%d.sock" % (own, os.getpid()))
    os.rmdir(own)


def main():
    if os.geteuid() != 0:
        print("python_socket_directory_test: skipped (needs root)")
        return
    user = 430000000 + os.getpid() % 100000
    taken = "/tmp/vramshim-%d" % user
    planted = taken + ".aaaaaa"
    go, start = os.pipe()
    report_read, report = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(start)
        os.close(report_read)
        try:
            as_user(user, go, report)
        finally:
            os._exit(0)
    os.close(go)
    os.close(report)
    try:
        # Another user's: the default directory, and a look-alike of the one the shim makes, with a
        # socket named after the child in it.
        for directory in (taken, planted):
            os.mkdir(directory, 0o700)
            os.chown(directory, SQUATTER, SQUATTER)
        impostor = socket.socket(socket.AF_UNIX)
        impostor.bind("%s/%d.sock" % (planted, child))
        os.chown("%s/%d.sock" % (planted, child), SQUATTER, SQUATTER)
        impostor.listen(8)
        os.write(start, b"x")
        answer = os.read(report_read, 65536).decode()
        check("'in_use_bytes': 4711" in answer, "stats() in the user's process: " + answer)
    finally:
        os.waitpid(child, 0)
        for directory in (taken, planted):
            for name in os.listdir(directory) if os.path.isdir(directory) else []:
                os.unlink(os.path.join(directory, name))
            if os.path.isdir(directory):
                os.rmdir(directory)
    finish("python_socket_directory_test")


main()
