"""Check 13: memory the framework did not allocate. Under PYTORCH_NO_CUDA_MEMORY_CACHING=1 and the shim, one
NCCL all-reduce through torch.distributed (world size 1, a file store) and one cuBLAS matmul, each checked
against the host. NCCL's communicator buffers and cuBLAS's handle workspace are allocated by those libraries
themselves, not by PyTorch's allocator; the report must attribute them to libnccl and libcublas frames.
Prints one JSON line {"event": "result", …}; exits 3 with {"event": "error", …} when torch, NCCL or a GPU is
missing.
"""

import json
import os
import sys
import tempfile

SIZE = 2048


def emit(**event):
    print(json.dumps(event), flush=True)


def all_reduce(torch, dist):
    """One all-reduce of a rank-numbered tensor: with one rank, the sum is the tensor itself."""
    with tempfile.TemporaryDirectory() as folder:
        dist.init_process_group("nccl", init_method=f"file://{folder}/store", rank=0, world_size=1)
        try:
            tensor = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
            dist.all_reduce(tensor)  # line: all_reduce
            torch.cuda.synchronize()
            return bool(torch.equal(tensor.cpu(), torch.arange(1 << 20, dtype=torch.float32)))
        finally:
            dist.destroy_process_group()


def matmul(torch):
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(SIZE, SIZE, generator=generator)
    b = torch.randn(SIZE, SIZE, generator=generator)
    product = (a.cuda() @ b.cuda()).cpu()  # line: matmul
    return bool(torch.allclose(product.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-2))


def nccl_version(torch):
    version = torch.cuda.nccl.version()  # a tuple (2, 27, 5); an int (22705) in older releases
    return ".".join(str(part) for part in version) if isinstance(version, tuple) else str(version)


def main():
    try:
        import torch
        import torch.distributed as dist
    except Exception as error:
        emit(event="error", error=f"cannot import torch: {error}")
        return 3
    if not torch.cuda.is_available():
        emit(event="error", error="torch.cuda.is_available() is False")
        return 3
    if not dist.is_available() or not dist.is_nccl_available():
        emit(event="error", error="this torch has no NCCL backend")
        return 3
    torch.cuda.set_device(0)
    reduced = all_reduce(torch, dist)
    multiplied = matmul(torch)
    problems = [name for name, ok in (("all_reduce", reduced), ("matmul", multiplied)) if not ok]
    emit(
        event="result",
        torch=torch.__version__,
        nccl=nccl_version(torch),
        device=torch.cuda.get_device_name(0),
        no_caching=os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", ""),
        correct=not problems,
        error=", ".join(f"{name} differs from the host's" for name in problems),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
