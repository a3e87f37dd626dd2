"""Allocates through a function of a framework's Python file (written for the run under
DIR/site-packages/torch/, where an installed PyTorch's are) until the device's limit refuses: the
out-of-memory block and the report name the line of this file that called it, marked "# line:
through_framework", not the framework's.

Usage: framework_files_app.py DIR
"""
import ctypes
import importlib.util
import os
import sys

MiB = 1 << 20
DRIVER = ctypes.CDLL("libcuda.so.1")

FRAMEWORK_CODE = '''
import ctypes


def empty(driver, size):
    ptr = ctypes.c_uint64()
    return driver.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)), ptr
'''


def check(result):
    if result != 0:
        raise RuntimeError("CUresult %d" % result)


def load_framework(directory):
    package = os.path.join(directory, "site-packages", "torch")
    os.makedirs(package, exist_ok=True)
    path = os.path.join(package, "functional.py")
    with open(path, "w") as out:
        out.write(FRAMEWORK_CODE)
    spec = importlib.util.spec_from_file_location("framework_functional", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grow(framework):
    kept = []
    while True:
        result, ptr = framework.empty(DRIVER, 4 * MiB)  # line: through_framework
        if result != 0:
            return kept, result
        kept.append(ptr)


def main():
    framework = load_framework(sys.argv[1])
    check(DRIVER.cuInit(0))
    context = ctypes.c_void_p()
    check(DRIVER.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0))
    check(DRIVER.cuCtxSetCurrent(context))
    kept, result = grow(framework)
    print("allocations=%d refused=%d" % (len(kept), result))


main()
