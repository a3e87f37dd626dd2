"""What the Python integration tests share: a check that records its failure and lets the test go
on, a bounded wait for a condition, and the end of a test (finish). Tests import it with
tests/support on sys.path (they run from the runfiles root, where their BUILD rule puts this file).
"""

import sys
import time

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message, file=sys.stderr, flush=True)


def wait_for(what, predicate, seconds=30, interval=0.1):
    """The first true value of predicate(), or None (a failure) once `seconds` have passed."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    check(False, "timed out waiting for " + what)
    return None


def finish(name):
    """Ends the test `name`: one summary line, and exit status 1 when a check failed."""
    if failures:
        print("%s: 0 passed, 1 failed (%d checks)" % (name, len(failures)))
        sys.exit(1)
    print("%s: 1 passed, 0 failed" % name)
