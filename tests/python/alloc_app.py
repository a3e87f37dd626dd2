"""Drives //shim/python through the test probe library, from Python code whose lines the
captured stacks must name. Usage: alloc_app.py PROBE_LIBRARY SCENARIO; prints one JSON document.

Lines marked "# line: NAME" are the ones the stacks must report; python_stacks_test.cc finds
them by their markers.
"""
import ctypes
import json
import os
import sys
import threading
import time

PROBE_PATH = sys.argv[1]
CDLL = ctypes.CDLL(PROBE_PATH)  # the GIL is released during each call
PYDLL = ctypes.PyDLL(PROBE_PATH)  # the GIL stays held during each call
for lib in (CDLL, PYDLL):
    lib.probe_python_capture_ns.restype = ctypes.c_int64
BUFFER_SIZE = 1 << 18


def call_json(function, *args):
    buffer = ctypes.create_string_buffer(BUFFER_SIZE)
    length = function(*args, buffer, BUFFER_SIZE)  # line: probe_call
    if length < 0:
        raise RuntimeError("probe output did not fit")
    return json.loads(buffer.value.decode())


def leak_from_python(lib):
    return call_json(lib.probe_capture_json)  # line: leak


def churn_from_python(lib, rounds):
    stacks = []
    for _ in range(rounds):
        stacks.append(call_json(lib.probe_capture_json))  # line: churn
    return stacks


def scenario_stacks():
    return {
        "cdll_leak": leak_from_python(CDLL),  # line: stacks_cdll
        "pydll_leak": leak_from_python(PYDLL),  # line: stacks_pydll
        "cdll_churn": churn_from_python(CDLL, 3)[-1],  # line: stacks_cdll_churn
        "pydll_churn": churn_from_python(PYDLL, 3)[-1],  # line: stacks_pydll_churn
    }


def innermost_python(stack):
    frames = [f for f in stack["hybrid"] if f["python"]]
    return [(f["function"], f["line"]) for f in frames[:2]]


def scenario_threads():
    results = {}

    def worker(index):
        seen = set()
        for _ in range(200):
            for stack in churn_from_python(CDLL, 1):  # line: worker
                seen.add(json.dumps(innermost_python(stack)))
        results[index] = sorted(seen)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"threads": [results[i] for i in range(4)]}


def capture_while_gil_is_held():
    return call_json(CDLL.probe_capture_for_ms, 600)  # line: busy


def scenario_busy():
    result = {}

    def capturer():
        result["capture"] = capture_while_gil_is_held()

    thread = threading.Thread(target=capturer)
    thread.start()
    time.sleep(0.1)
    PYDLL.probe_spin_ms(400)  # holds the GIL while the other thread captures
    thread.join()
    return result


def scenario_exit():
    def capture_forever():
        while True:
            CDLL.probe_capture_for_ms(
                100000, ctypes.create_string_buffer(BUFFER_SIZE), BUFFER_SIZE
            )

    for _ in range(4):
        threading.Thread(target=capture_forever, daemon=True).start()
    time.sleep(0.2)
    print(json.dumps({"exiting": True}), flush=True)
    sys.exit(0)  # finalizes the interpreter while the daemon threads capture


def scenario_deep_flush():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_frameworks"))
    import cupy  # noqa: F401
    import torch

    result = {}
    result["released"] = call_json(CDLL.probe_deep_flush_json, 5000)
    result["empty_cache_calls_after_flush"] = torch.cuda.empty_cache_calls

    stop = threading.Event()

    def busy_python():
        while not stop.is_set():
            pass

    busy = threading.Thread(target=busy_python)
    busy.start()
    result["with_busy_thread"] = call_json(CDLL.probe_deep_flush_json, 5000)
    stop.set()
    busy.join()
    result["empty_cache_calls_after_busy"] = torch.cuda.empty_cache_calls

    # The caller holds the GIL through PyDLL: the deep flush must give up, not hang, and the
    # abandoned helper must not run the flush once it gets the GIL.
    result["gil_held"] = call_json(PYDLL.probe_deep_flush_json, 300)
    time.sleep(0.3)
    result["empty_cache_calls_after_timeout"] = torch.cuda.empty_cache_calls

    torch.cuda.initialized = False
    result["cuda_not_initialized"] = call_json(CDLL.probe_deep_flush_json, 5000)
    return result


def recurse(depth, function):
    if depth <= 1:
        return function()
    return recurse(depth - 1, function)


def scenario_cost():
    iterations = 100000
    costs = {}
    for depth in (10, 30, 50):
        elapsed = recurse(depth, lambda: CDLL.probe_python_capture_ns(iterations))
        costs[str(depth)] = elapsed / iterations
    return {"ns_per_capture": costs}


SCENARIOS = {
    "stacks": scenario_stacks,
    "threads": scenario_threads,
    "busy": scenario_busy,
    "exit": scenario_exit,
    "deep_flush": scenario_deep_flush,
    "cost": scenario_cost,
}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[2]]()), flush=True)  # line: main
