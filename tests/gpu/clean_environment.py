"""The environment the GPU check and the GPU benchmark start their programs in: the caller's, less what
each run sets itself. Used by gpu_checks.py and bench/gpu/bench.py."""

# Set per run by the checks and the benchmark themselves. Inherited from the caller they would reach every
# run: a preloaded "without the shim" run, PyTorch's allocator already switched, JAX not preallocating.
_PER_RUN_NAMES = (
    "LD_PRELOAD",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUBLAS_WORKSPACE_CONFIG",
)
_PER_RUN_PREFIXES = ("VRAMSHIM_", "XLA_PYTHON_CLIENT_")


def clean_environment(environ):
    """A copy of `environ` (a mapping) fit for the programs of the check and the benchmark."""
    env = {
        name: value
        for name, value in environ.items()
        if name not in _PER_RUN_NAMES and not name.startswith(_PER_RUN_PREFIXES)
    }
    # DEBUGINFOD_URLS and XDG_RUNTIME_DIR stay as the caller has them: the CLI leaves debuginfod alone unless
    # asked, and the shim falls back to /tmp/vramshim-UID when the runtime folder is unusable, so the check
    # sees what a user's job would.
    return env
