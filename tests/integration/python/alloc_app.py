"""Allocates GPU memory through the (simulated) driver with ctypes, under the shim. The exit report's
stacks must name leak_from_python() and churn_from_python() at the lines marked "# line: NAME",
innermost first, where the interpreter's frames were in the native stack.

Usage: alloc_app.py MODE
  cdll     allocations through ctypes.CDLL (the GIL is released during each call)
  pydll    allocations through ctypes.PyDLL (the GIL stays held during each call)
  threads  four threads allocating at once
  busy     one thread allocates while another holds the GIL in a busy loop
  exit     the interpreter exits while daemon threads allocate
  deep     a fake torch holds cached memory; VRAMSHIM_CLI flush --deep OWN_PID empties it
  deep_while_finalizing  VRAMSHIM_CLI flush --deep OWN_PID arrives while the interpreter finalizes
  sigterm_during_deep  a SIGTERM arrives while the fake torch's empty_cache() takes 20 s in a deep
           flush
  fault_during_deep  the fake torch's empty_cache() dereferences a null pointer in a deep flush
  borrowed LIBRARY  a C thread allocates in a loop with no Python code of its own, while another
           runs deep recursions with the thread state the first one made (LIBRARY:
           tests/integration/programs/libborrowed_thread_state.so)
"""
import ctypes
import os
import subprocess
import sys
import threading
import time

MODE = sys.argv[1]
LOADER = ctypes.PyDLL if MODE == "pydll" else ctypes.CDLL
DRIVER = LOADER("libcuda.so.1")
MiB = 1 << 20


def check(result):
    if result != 0:
        raise RuntimeError("CUresult %d" % result)


def start_driver():
    check(DRIVER.cuInit(0))
    context = ctypes.c_void_p()
    check(DRIVER.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0))
    check(DRIVER.cuCtxSetCurrent(context))
    return context


def leak_from_python(size):
    ptr = ctypes.c_uint64()
    check(DRIVER.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)))  # line: leak
    return ptr


def churn_from_python(rounds):
    for _ in range(rounds):
        ptr = ctypes.c_uint64()
        check(DRIVER.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(4096)))  # line: churn
        check(DRIVER.cuMemFree_v2(ptr))


def allocate_in_threads(context, count, rounds, daemon=False):
    def worker():
        check(DRIVER.cuCtxSetCurrent(context))
        churn_from_python(rounds)  # line: worker

    threads = [threading.Thread(target=worker, daemon=daemon) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads


class SlowToFinalize:
    """Cleared with the module's globals, after the interpreter started finalizing."""

    def __del__(self):
        time.sleep(3)


def main():
    context = start_driver()
    kept = [leak_from_python(MiB) for _ in range(3)]  # line: leak_caller
    if MODE in ("cdll", "pydll"):
        churn_from_python(100)  # line: churn_caller
    elif MODE == "threads":
        for thread in allocate_in_threads(context, 4, 500):
            thread.join()
    elif MODE == "busy":
        stop = time.monotonic() + 0.5
        sys.setswitchinterval(0.2)  # the busy thread keeps the GIL for long stretches

        def spin():
            while time.monotonic() < stop:
                pass

        spinner = threading.Thread(target=spin)
        spinner.start()
        for thread in allocate_in_threads(context, 1, 300):
            thread.join()
        spinner.join()
    elif MODE == "exit":
        allocate_in_threads(context, 4, 10**9, daemon=True)
        time.sleep(0.2)
        sys.exit(0)
    elif MODE == "deep":
        import torch  # the test double on sys.path: holds 64 MiB it frees on empty_cache()

        torch.cuda.hold(DRIVER, 64 * MiB)
        live = ctypes.CDLL("libcuda.so.1").fakecuda_live_bytes
        live.restype = ctypes.c_uint64
        before = live(0)
        flushed = subprocess.run(
            [os.environ["VRAMSHIM_CLI"], "flush", "--deep", str(os.getpid())],
            capture_output=True, text=True, timeout=60)
        print("cli status=%d" % flushed.returncode)
        print(flushed.stdout + flushed.stderr, end="")
        print("driver live before=%d after=%d" % (before, live(0)))
        # The same as a JSON document, for scripts.
        torch.cuda.hold(DRIVER, 32 * MiB)
        flushed = subprocess.run(
            [os.environ["VRAMSHIM_CLI"], "flush", "--deep", "--format", "json", str(os.getpid())],
            capture_output=True, text=True, timeout=60)
        print("json status=%d document=%s" % (flushed.returncode, flushed.stdout.strip()))
    elif MODE == "sigterm_during_deep":
        import torch

        torch.cuda.hold(DRIVER, 16 * MiB)
        torch.cuda.empty_cache_seconds = 20
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.Popen([os.environ["VRAMSHIM_CLI"], "flush", "--deep", str(os.getpid())], **quiet)
        subprocess.Popen(["sh", "-c", 'sleep 1; kill -TERM "$0"', str(os.getpid())], **quiet)
        time.sleep(30)
        print("not ended by the SIGTERM")
    elif MODE == "fault_during_deep":
        import torch

        torch.cuda.hold(DRIVER, 16 * MiB)
        torch.cuda.empty_cache_faults = True
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.Popen([os.environ["VRAMSHIM_CLI"], "flush", "--deep", str(os.getpid())], **quiet)
        time.sleep(30)
        print("not ended by the fault")
    elif MODE == "borrowed":
        library = ctypes.PyDLL(sys.argv[2])
        library.run_with_a_borrowed_thread_state.restype = ctypes.c_long
        code = b"""
def deep(n):
    return sum(range(5)) if n == 0 else deep(n - 1)
for r in range(3000):
    deep(400 + r % 50)
    exec(compile("def f():\\n  return 1\\nf()", "generated%d" % r, "exec"))
"""
        allocations = library.run_with_a_borrowed_thread_state(context, code)
        print("borrowed allocations=%d" % allocations)
    elif MODE == "deep_while_finalizing":
        # The flush's thread waits for the GIL, which this thread keeps (no I/O, no switch) until
        # the interpreter finalizes: CPython then ends the waiting thread (pthread_exit), whose
        # unwinding goes through the shim's frames.
        print("done %s %d" % (MODE, len(kept)), flush=True)
        subprocess.Popen(
            ["sh", "-c", 'sleep 0.5; exec "$0" flush --deep "$1"', os.environ["VRAMSHIM_CLI"],
             str(os.getpid())], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sys.setswitchinterval(100)
        global SLOW_AT_FINALIZATION
        SLOW_AT_FINALIZATION = SlowToFinalize()
        stop = time.monotonic() + 2
        while time.monotonic() < stop:
            pass
        return
    print("done %s %d" % (MODE, len(kept)))


main()
