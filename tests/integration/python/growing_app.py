"""A training loop in Python that leaks 1 MiB of GPU memory per step through ctypes (the simulated
driver, under the shim), among allocations freed within the step. `vramshim report --growth` must
name the line marked "# line: leak".

Usage: growing_app.py STEPS
"""
import ctypes
import sys
import time

DRIVER = ctypes.CDLL("libcuda.so.1")
MiB = 1 << 20


def check(result):
    if result != 0:
        raise RuntimeError("CUresult %d" % result)


def allocate(size):
    ptr = ctypes.c_uint64()
    check(DRIVER.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)))
    return ptr


def keep_history(kept):
    kept.append(allocate(MiB))  # line: leak


def step_buffers():
    return [allocate(2 * MiB), allocate(256 * 1024)]


def main():
    check(DRIVER.cuInit(0))
    context = ctypes.c_void_p()
    check(DRIVER.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0))
    check(DRIVER.cuCtxSetCurrent(context))
    kept = []
    for _ in range(int(sys.argv[1])):
        buffers = step_buffers()
        keep_history(kept)
        time.sleep(0.02)
        for ptr in buffers:
            check(DRIVER.cuMemFree_v2(ptr))


main()
