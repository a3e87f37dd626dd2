"""Check 6: a small CuPy computation, checked against NumPy. Prints one JSON line.
Exits 3 when CuPy or a GPU is missing.
"""

import json
import sys


def main():
    try:
        import cupy as cp
        import numpy as np
    except Exception as error:
        print(json.dumps({"event": "error", "error": f"cannot import cupy: {error}"}))
        return 3
    try:
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    except Exception as error:  # CUDARuntimeError when there is no device or no driver
        print(json.dumps({"event": "error", "error": f"CuPy finds no GPU: {error}"}))
        return 3
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512), dtype=np.float32)
    b = rng.standard_normal((512, 512), dtype=np.float32)
    product = cp.asnumpy(cp.asarray(a) @ cp.asarray(b))
    buffers = [cp.full((1 << 20,), i, dtype=cp.float32) for i in range(16)]  # 64 MiB in 16 buffers
    total = float(sum(float(buffer.sum()) for buffer in buffers))
    del buffers
    cp.get_default_memory_pool().free_all_blocks()  # CuPy's own pool gives the blocks back to cudaFree
    correct = np.allclose(product, a @ b, rtol=1e-3, atol=1e-2) and total == float(sum(i * (1 << 20) for i in range(16)))
    print(
        json.dumps(
            {
                "event": "result",
                "framework": "cupy",
                "version": cp.__version__,
                "device": name.decode(errors="replace"),  # bytes (CuPy 14's own cupyx/_runtime.py decodes it)
                "correct": bool(correct),
                "error": "" if correct else "a result differs from NumPy's",
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
