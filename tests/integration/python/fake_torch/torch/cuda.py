"""torch.cuda as the deep flush sees it: is_initialized() and empty_cache()."""
import ctypes
import time

_driver = None
_cached = []
empty_cache_calls = 0
# Seconds empty_cache() takes first, as PyTorch's takes while it synchronizes a busy device.
empty_cache_seconds = 0
# Whether empty_cache() dereferences a null pointer, as a framework's native code may.
empty_cache_faults = False


def hold(driver, size):
    """Allocates `size` bytes through `driver` (a ctypes library) and keeps them cached."""
    global _driver
    _driver = driver
    ptr = ctypes.c_uint64()
    if driver.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)) != 0:
        raise RuntimeError("cuMemAlloc_v2 failed")
    _cached.append(ptr)


def is_initialized():
    return _driver is not None


def empty_cache():
    global empty_cache_calls
    empty_cache_calls += 1
    time.sleep(empty_cache_seconds)
    if empty_cache_faults:
        ctypes.string_at(0)
    while _cached:
        _driver.cuMemFree_v2(_cached.pop())
