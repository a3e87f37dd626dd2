"""What the Python integration tests share: a check that records its failure and lets the test go
on, and a bounded wait for a condition. Tests import it with tests/support on sys.path (they run
from the runfiles root, where their BUILD rule puts this file), and end by looking at `failures`.
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
