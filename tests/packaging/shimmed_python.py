"""Run under the shim (`vramshim run python shimmed_python.py REPORT`) from the test venv: the
Python calls of the installed wheel on the process's own shim. Prints one "ok: ..." line per check
and exits 1 at the first that fails."""

import ctypes
import json
import os
import sys
import time
import types

import vramshim

MiB = 1 << 20
REPORT = sys.argv[1]


def check(condition, what):
    if not condition:
        print("FAIL: " + what, flush=True)
        sys.exit(1)
    print("ok: " + what, flush=True)


def driver_call(result):
    if result != 0:
        raise RuntimeError("CUresult %d" % result)


# The shim starts at the process's first CUDA call: before it, the calls say so.
try:
    vramshim.stats()
    check(False, "stats() before any CUDA call raises NotUnderShim")
except vramshim.NotUnderShim as error:
    check("first CUDA call" in str(error), "stats() before any CUDA call: %s" % error)

driver = ctypes.CDLL("libcuda.so.1")
driver_call(driver.cuInit(0))
context = ctypes.c_void_p()
driver_call(driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0))
driver_call(driver.cuCtxSetCurrent(context))
held = ctypes.c_uint64()
driver_call(driver.cuMemAlloc_v2(ctypes.byref(held), ctypes.c_size_t(3 * MiB)))
freed = ctypes.c_uint64()
# Larger than a pool segment: a segment of its own, which the flush can give back.
driver_call(driver.cuMemAlloc_v2(ctypes.byref(freed), ctypes.c_size_t(32 * MiB)))
driver_call(driver.cuMemFree_v2(freed))

figures = vramshim.stats()
devices = figures["devices"]
check(any(d["in_use_bytes"] == 3 * MiB for d in devices),
      "stats() shows the 3 MiB in use: %s" % json.dumps(devices))
check(any(d["cached_bytes"] >= 32 * MiB for d in devices), "stats() shows the freed 32 MiB cached")

flushed = vramshim.flush()
check(flushed["released_bytes"] >= 32 * MiB, "flush() released %d bytes" % flushed["released_bytes"])
check(all(d["cached_bytes"] < 32 * MiB for d in vramshim.stats()["devices"]),
      "the 32 MiB are no longer cached after flush()")

# A deep flush calls the frameworks' own release: a torch that holds 24 MiB in its cache (more than
# the pool has free, so a segment of its own).
torch = types.ModuleType("torch")
torch.cuda = types.ModuleType("torch.cuda")
torch_cache = []


def empty_cache():
    # Slower than the 10 s the module waited for an answer, which the shim gives within 35 s.
    time.sleep(11)
    while torch_cache:
        driver_call(driver.cuMemFree_v2(torch_cache.pop()))


torch.cuda.is_initialized = lambda: True
torch.cuda.empty_cache = empty_cache
sys.modules["torch"], sys.modules["torch.cuda"] = torch, torch.cuda
cached = ctypes.c_uint64()
driver_call(driver.cuMemAlloc_v2(ctypes.byref(cached), ctypes.c_size_t(24 * MiB)))
torch_cache.append(cached)
deep = vramshim.flush(deep=True)
check(not torch_cache, "flush(deep=True) ran torch.cuda.empty_cache(): %s" % json.dumps(deep))
check(deep["released_bytes"] >= 24 * MiB, "flush(deep=True) released torch's 24 MiB")

written = vramshim.snapshot(REPORT)
check(written == os.path.abspath(REPORT), "snapshot() wrote %s" % written)
with open(written) as report:
    document = json.load(report)
check(document["format"] == "vramshim-report" and document["reason"] == "socket",
      "the snapshot is a report written on request")
check(document["process"]["pid"] == os.getpid(), "the snapshot is this process's")
