"""Allocation pairs at a given Python depth through ctypes, timed: the Python workload of
bench/peers/run.sh.

Usage: python_alloc.py cuda|malloc DEPTH PAIRS [LIBRARY]
  cuda    cuMemAlloc_v2 + cuMemFree_v2 of libcuda.so.1 (the simulated driver, under the shim)
  malloc  peer_alloc + peer_free of LIBRARY (libpeer_allocator.so: malloc and free, under memray)
DEPTH counts the Python frames on the thread's stack at each call, the module's own included (and
those of a tool that runs the script, such as memray's). Prints "python_frames=DEPTH ns_per_pair=NS
cpu_ns_per_pair=NS": wall time and the thread's CPU time, after a warm-up of PAIRS / 10 pairs and at
least 0.5 s.
"""
import ctypes
import sys
import time

CUDA_BYTES = 4096
MALLOC_BYTES = 1024
WARM_UP_NS = 500_000_000
WARM_UP_CHUNK = 1000


def python_frames():
    """The Python frames on the stack of the caller of this function, the caller included."""
    frame, count = sys._getframe(1), 0
    while frame is not None:
        count += 1
        frame = frame.f_back
    return count


def cuda_pairs():
    driver = ctypes.CDLL("libcuda.so.1")
    context = ctypes.c_void_p()
    for result in (driver.cuInit(0), driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0),
                   driver.cuCtxSetCurrent(context)):
        if result != 0:
            raise RuntimeError("CUresult %d" % result)
    alloc, free = driver.cuMemAlloc_v2, driver.cuMemFree_v2
    alloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    free.argtypes = [ctypes.c_uint64]
    pointer = ctypes.c_uint64()
    where = ctypes.byref(pointer)

    def allocate_pairs(pairs):
        depth = python_frames()
        for _ in range(pairs):
            alloc(where, CUDA_BYTES)
            free(pointer.value)
        return depth

    return allocate_pairs


def malloc_pairs(library):
    peer = ctypes.CDLL(library)
    alloc, free = peer.peer_alloc, peer.peer_free
    alloc.argtypes, alloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    free.argtypes, free.restype = [ctypes.c_void_p], None

    def allocate_pairs(pairs):
        depth = python_frames()
        for _ in range(pairs):
            free(alloc(MALLOC_BYTES))
        return depth

    return allocate_pairs


def descend(remaining, run, argument):
    """run(argument) with `remaining` more Python frames below the caller's, each of its own
    function (as a real program's frames are). Plain calls, which CPython 3.11+ makes without a C
    call of its eval loop: the native stack stays as deep as at depth 1."""
    if remaining == 0:
        return run(argument)
    return LEVELS[remaining - 1](run, argument)


def make_levels(count):
    """level_i calls level_{i-1}, level_0 calls run: distinct code objects."""
    levels = []
    for index in range(count):
        namespace = {"below": levels[-1] if levels else None}
        body = "below(run, argument)" if levels else "run(argument)"
        exec("def level_%d(run, argument):\n    return %s\n" % (index, body), namespace)
        levels.append(namespace["level_%d" % index])
    return levels


LEVELS = make_levels(256)


def main():
    mode, depth, pairs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    allocate_pairs = cuda_pairs() if mode == "cuda" else malloc_pairs(sys.argv[4])

    def at_leaf(pairs):
        if pairs == 0:
            return allocate_pairs(0), 0.0, 0.0
        # Warm-up: the pool's segment, the frame tables, and a tool's start.
        warm_until, warm_pairs = time.perf_counter_ns() + WARM_UP_NS, 0
        while warm_pairs < pairs // 10 or time.perf_counter_ns() < warm_until:
            allocate_pairs(WARM_UP_CHUNK)
            warm_pairs += WARM_UP_CHUNK
        start, cpu_start = time.perf_counter_ns(), time.thread_time_ns()
        frames = allocate_pairs(pairs)
        cpu_ns = time.thread_time_ns() - cpu_start
        return frames, (time.perf_counter_ns() - start) / pairs, cpu_ns / pairs

    levels = depth - descend(0, at_leaf, 0)[0]
    if levels < 0 or pairs <= 0:
        sys.exit("DEPTH must be at least %d and PAIRS positive" % (depth - levels))
    frames, ns_per_pair, cpu_ns_per_pair = descend(levels, at_leaf, pairs)
    print("python_frames=%d ns_per_pair=%.1f cpu_ns_per_pair=%.1f" % (frames, ns_per_pair,
                                                                      cpu_ns_per_pair))


main()
