"""The environment the GPU check and the GPU benchmark start their programs in: the caller's, less what
would change what they measure or make them wait. Used by gpu_checks.py and bench/gpu/bench.py."""

import os

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
    # The GPU machine has no network: with DEBUGINFOD_URLS set, libdw (the CLI's symbolizer, in the summary of
    # `vramshim run`) asks a debuginfod server about every module without debug information, and where the
    # connection is not refused outright it can wait out the client's timeout (90 s) each time.
    env.pop("DEBUGINFOD_URLS", None)
    # The shim and the CLI put the control socket under $XDG_RUNTIME_DIR when it is set; a session without
    # systemd can leave it naming a folder that does not exist, and the shim then opens no socket at all.
    # Without it both use /tmp/vramshim-UID.
    runtime_dir = env.get("XDG_RUNTIME_DIR")
    if runtime_dir is not None and not (os.path.isdir(runtime_dir) and os.access(runtime_dir, os.W_OK | os.X_OK)):
        del env["XDG_RUNTIME_DIR"]
    return env
