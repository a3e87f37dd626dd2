"""The shim's control socket, asked by the process the shim runs in (README.md, "Control socket").

The socket is trusted as the CLI trusts one (analyzer/control): in a directory of this user with no
group or other permissions, a socket (not a link) owned by this user, and served (SO_PEERCRED) by
this very process as this user.
"""

import json
import os
import socket
import stat
import struct

_TIMEOUT_SECONDS = 10.0
# As the CLI waits (analyzer/commands/flush.cc): a flush waits for the GPU work in flight, a deep
# one also up to 5 s for the GIL and 30 s for the frameworks' own releases; a report walks every
# live allocation.
_FLUSH_TIMEOUT_SECONDS = 60.0
_REPORT_TIMEOUT_SECONDS = 60.0
# Far above any answer the shim gives to stats, flush or report.
_MAX_ANSWER_BYTES = 16 << 20


class ShimError(RuntimeError):
    """The shim could not be asked, or it refused the request (the message says which and why)."""


class NotUnderShim(ShimError):
    """This process does not run under the shim, or the shim has no control socket in it."""


def _shim_loaded():
    """Whether libvramshim.so is mapped into this process; None when that cannot be told."""
    try:
        with open("/proc/self/maps") as maps:
            return any(os.path.basename(line.split()[-1]).startswith("libvramshim")
                       for line in maps if len(line.split()) >= 6)
    except OSError:
        return None


def _not_under_shim():
    pid = os.getpid()
    if _shim_loaded() is False:
        return NotUnderShim(
            "pid %d is not running under the vramshim shim; start it with "
            "`vramshim run python ...` (or a kernel from `vramshim jupyter install`)" % pid)
    if os.environ.get("VRAMSHIM_DISABLE") == "1":
        return NotUnderShim("the shim is disabled in pid %d (VRAMSHIM_DISABLE=1)" % pid)
    if os.environ.get("VRAMSHIM_SOCKET") == "off":
        return NotUnderShim("the shim's control socket is off in pid %d (VRAMSHIM_SOCKET=off)" % pid)
    return NotUnderShim(
        "the shim is loaded in pid %d but has no control socket: it starts at the process's first "
        "CUDA call (never in a forked child), or it could not create the socket (see its warning "
        "on stderr)" % pid)


def _trusted_directory_problem(directory, uid):
    """Why `directory` may not hold this user's sockets (as analyzer/control/socket_directory.cc
    checks it); None when it may. Raises FileNotFoundError when it does not exist."""
    fd = os.open(directory, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if stat.S_ISLNK(info.st_mode):
        return "%s is a symbolic link" % directory
    if not stat.S_ISDIR(info.st_mode):
        return "%s is not a directory" % directory
    if info.st_uid != uid:
        return "%s is owned by uid %d, not %d" % (directory, info.st_uid, uid)
    if info.st_mode & 0o077:
        return "%s has group or other permissions" % directory
    return None


def _socket_problem(path, uid):
    """Why `path` is not a socket of `uid` (not following a link); None when it is one. Raises
    FileNotFoundError when there is nothing there."""
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode):
        return "%s is not a socket" % path
    if info.st_uid != uid:
        return "%s is owned by uid %d, not %d" % (path, info.st_uid, uid)
    return None


def _own_tmp_directories(uid):
    """The directories /tmp/vramshim-UID.XXXXXX of `uid` (six letters or digits, as mkdtemp makes
    them), by name: where the shim puts its socket when another user made /tmp/vramshim-UID first
    (as analyzer/control/socket_directory_names.cc finds them). Each is checked as any other."""
    prefix = "vramshim-%d." % uid
    try:
        names = os.listdir("/tmp")
    except OSError:
        return []
    return ["/tmp/" + name for name in sorted(names)
            if name.startswith(prefix) and len(name) == len(prefix) + 6
            and name[len(prefix):].isascii() and name[len(prefix):].isalnum()]


def _candidate_sockets():
    """Where the shim of this process put its socket (README.md, VRAMSHIM_SOCKET), preferred first,
    with the directory each must be checked as (None for a path the user chose)."""
    configured = os.environ.get("VRAMSHIM_SOCKET", "")
    if configured:
        yield os.path.abspath(configured), None
        return
    uid = os.geteuid()
    directories = []
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime_dir:
        directories.append(os.path.join(runtime_dir, "vramshim"))
    directories.append("/tmp/vramshim-%d" % uid)
    for directory in directories:
        yield os.path.join(directory, "%d.sock" % os.getpid()), directory
    # Listed only when the socket is in none of those.
    for directory in _own_tmp_directories(uid):
        yield os.path.join(directory, "%d.sock" % os.getpid()), directory


def _own_socket():
    """The path of this process's trusted control socket; raises NotUnderShim or ShimError."""
    uid = os.geteuid()
    refusals = []
    for path, directory in _candidate_sockets():
        try:
            problem = directory and _trusted_directory_problem(directory, uid)
            problem = problem or _socket_problem(path, uid)
        except FileNotFoundError:
            continue
        except OSError as error:
            problem = "cannot inspect %s: %s" % (path, error.strerror)
        if problem is None:
            return path
        refusals.append(problem)
    if refusals:
        raise ShimError("no trusted vramshim socket for pid %d: %s" % (os.getpid(), "; ".join(refusals)))
    raise _not_under_shim()


def _ask(request, timeout):
    """Sends one request line to this process's shim and returns its answer (a dict with
    "ok": true); raises ShimError when it cannot be asked or refuses."""
    path = _own_socket()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(timeout)
        try:
            connection.connect(path)
        except OSError as error:
            raise ShimError("cannot connect to %s: %s" % (path, error.strerror or error)) from None
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                            struct.calcsize("3i"))
        peer_pid, peer_uid, _ = struct.unpack("3i", credentials)
        if peer_pid != os.getpid() or peer_uid != os.geteuid():
            raise ShimError("%s is served by pid %d of uid %d, not by this process (pid %d of uid %d); "
                            "not trusted" % (path, peer_pid, peer_uid, os.getpid(), os.geteuid()))
        answer = b""
        try:
            connection.sendall(request.encode() + b"\n")
            while b"\n" not in answer and len(answer) < _MAX_ANSWER_BYTES:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except socket.timeout:
            raise ShimError("%s: no answer within %d s" % (path, timeout)) from None
        except OSError as error:
            raise ShimError("%s: %s" % (path, error.strerror or error)) from None
    if not answer:
        raise ShimError("%s: the shim closed the connection without an answer" % path)
    try:
        parsed = json.loads(answer.split(b"\n", 1)[0])
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ShimError("%s: the answer is not a JSON object" % path)
    if parsed.get("ok") is not True:
        raise ShimError("the shim refused '%s': %s" % (request.split(" ", 1)[0],
                                                       parsed.get("error", "request failed")))
    return parsed


def stats():
    """The shim's figures for this process: its answer to `stats`, per device in_use_bytes,
    cached_bytes, reserved_bytes, peak_in_use_bytes, driver_alloc_calls, pool_hits, limit_bytes."""
    return _ask("stats", _TIMEOUT_SECONDS)


def flush(deep=False):
    """Empties the shim's pool back to the driver; with deep=True, first has torch and CuPy empty
    their own caches (as `vramshim flush --deep`). Returns the shim's answer: released_bytes and,
    when deep, what each framework step did."""
    return _ask("flush deep" if deep else "flush", _FLUSH_TIMEOUT_SECONDS)


def snapshot(path):
    """Has the shim write this process's allocation report to `path` now (atomically: a temporary
    file, then a rename). Returns the path written, absolute."""
    target = os.path.abspath(os.fspath(path))
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        raise ValueError("a report path must not contain control characters: %r" % target)
    answer = _ask("report " + target, _REPORT_TIMEOUT_SECONDS)
    return answer.get("path", target)
