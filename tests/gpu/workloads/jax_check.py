"""Check 6: a small JAX computation on the GPU, checked against NumPy. Prints one JSON line.
The allocator is chosen by the caller (XLA_PYTHON_CLIENT_ALLOCATOR). Exits 3 when JAX or a GPU is missing.
"""

import json
import sys


def main():
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np
    except Exception as error:
        print(json.dumps({"event": "error", "error": f"cannot import jax: {error}"}))
        return 3
    try:
        device = jax.devices()[0]
    except Exception as error:  # a CUDA plugin that fails to start can raise instead of falling back
        print(json.dumps({"event": "error", "error": f"JAX has no device: {error}"}))
        return 3
    if device.platform != "gpu":
        print(json.dumps({"event": "error", "error": f"JAX runs on {device.platform}, not a GPU"}))
        return 3
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512), dtype=np.float32)
    b = rng.standard_normal((512, 512), dtype=np.float32)
    product = np.asarray(jnp.matmul(jnp.asarray(a), jnp.asarray(b), precision=jax.lax.Precision.HIGHEST))
    counts = int(jnp.sum(jnp.arange(1 << 22, dtype=jnp.int32) % 7))
    buffers = [jnp.full((1 << 20,), i, dtype=jnp.float32) for i in range(16)]  # 64 MiB in 16 buffers
    total = float(sum(float(jnp.sum(buffer)) for buffer in buffers))
    expected_counts = sum(i % 7 for i in range(7)) * ((1 << 22) // 7) + sum(i % 7 for i in range((1 << 22) % 7))
    correct = (
        np.allclose(product, a @ b, rtol=1e-4, atol=1e-3)
        and counts == expected_counts
        and total == float(sum(i * (1 << 20) for i in range(16)))
    )
    print(
        json.dumps(
            {
                "event": "result",
                "framework": "jax",
                "version": jax.__version__,
                "device": str(device.device_kind),
                "correct": bool(correct),
                "error": "" if correct else "a result differs from NumPy's",
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
