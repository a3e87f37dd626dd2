"""Check 7: run under VRAMSHIM_LIMIT=2GiB. Prints one JSON line: mem_get_info's total, how many bytes of
64 MiB tensors PyTorch held when it raised torch.cuda.OutOfMemoryError, and the file:line that allocated them
(which the shim's out-of-memory block on stderr must name). Exits 3 when torch or a GPU is missing.
"""

import json
import os
import sys

CHUNK = 64 << 20
MAX_CHUNKS = 1024  # 64 GiB: far past the limit, so a missing limit ends the loop instead of the device


def allocate_chunk(torch):
    return torch.empty(CHUNK, dtype=torch.uint8, device="cuda")


# The line of allocate_chunk's body, as the shim labels a Python frame.
ALLOCATING_LINE = f"{os.path.basename(__file__)}:{allocate_chunk.__code__.co_firstlineno + 1}"


def main():
    try:
        import torch
    except Exception as error:
        print(json.dumps({"event": "error", "error": f"cannot import torch: {error}"}))
        return 3
    if not torch.cuda.is_available():
        print(json.dumps({"event": "error", "error": "torch.cuda.is_available() is False"}))
        return 3
    free, total = torch.cuda.mem_get_info()
    blocks, oom_error = [], ""
    try:
        for _ in range(MAX_CHUNKS):
            blocks.append(allocate_chunk(torch))
    except torch.cuda.OutOfMemoryError as error:
        oom_error = str(error).splitlines()[0][:200]
    allocated = len(blocks) * CHUNK
    del blocks
    torch.cuda.empty_cache()
    print(
        json.dumps(
            {
                "event": "result",
                "torch": torch.__version__,
                "free_bytes": free,
                "total_bytes": total,
                "device_total_memory": torch.cuda.get_device_properties(0).total_memory,
                "allocated_at_oom": allocated,
                "oom_error": oom_error,
                "allocating_line": ALLOCATING_LINE,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
