"""The PyTorch training step of docs/design.md, "The target, as measured" (TransformerEncoderLayer d=1024, ffn 4096, batch 16×256, AdamW).

Used by tests/gpu/gpu_checks.py (checks 3, 4, 5, 8, with --deterministic; 11 with --record-snapshot) and
bench/gpu/bench.py (timing).
Prints JSON lines on stdout: {"event": "step", "step": i} after every step when --progress is given,
{"event": "ready"} when --wait-file is given and step --ready-step is done, and one final
{"event": "result", …} with the per-step losses (float.hex strings, so a comparison is exact), the median
step time, PyTorch's peak reserved bytes and, with --after, what a flush released.
Exits 3 with {"event": "error", …} when torch or a GPU is missing.
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time

import outside_view

MIB = 1 << 20


def emit(**event):
    print(json.dumps(event), flush=True)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50, help="steps whose loss is recorded")
    parser.add_argument("--warmup", type=int, default=5, help="steps before timing starts (counted in --steps)")
    parser.add_argument("--d-model", type=int, default=1024)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--deterministic", action="store_true", help="seeded, deterministic kernels, math attention")
    parser.add_argument("--progress", action="store_true", help="print a step event after every step")
    parser.add_argument("--wait-file", help="before the last step, wait (at most 60 s) until this file exists")
    parser.add_argument("--ready-step", type=int, default=10, help="with --wait-file: print ready after this step")
    parser.add_argument(
        "--after",
        choices=["none", "empty-cache-flush", "async-flush", "deep-flush"],
        default="none",
        help="after training: free everything and flush the shim (see flush_own_cache / flush_async_pool)",
    )
    parser.add_argument("--cli", help="the vramshim command, for --after")
    parser.add_argument(
        "--record-snapshot",
        metavar="PATH",
        help="record PyTorch's allocation history from the start and dump its memory snapshot to PATH after "
        "training (torch.cuda.memory._record_memory_history / _dump_snapshot)",
    )
    return parser.parse_args()


def device_used_bytes(torch):
    return outside_view.nvml_used_bytes(lambda: torch.cuda.device_memory_used(0))


def run_flush(cli):
    """`vramshim flush <this pid>`; returns (ok, released bytes, error)."""
    status, text = outside_view.run_cli(cli, "flush")
    released = outside_view.released_bytes(text)
    if status != 0 or released is None:
        return False, 0, (text.strip() or f"exit {status}")[:200]
    return True, released, ""


def build(torch, args):
    if args.deterministic:
        torch.manual_seed(0)
        # warn_only: an operator without a deterministic kernel warns instead of failing the run; the
        # comparison then says how far the losses are apart. TF32 matmul is off by default.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
        # The fused attention kernels' backward passes use atomics; the math path is deterministic.
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
            torch.backends.cuda.enable_cudnn_sdp(False)
    model = torch.nn.TransformerEncoderLayer(
        d_model=args.d_model, nhead=16, dim_feedforward=args.ffn, dropout=0.1, batch_first=True, device="cuda"
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    generator = torch.Generator(device="cuda").manual_seed(1)
    inputs = torch.randn(args.batch, args.seq, args.d_model, device="cuda", generator=generator)
    targets = torch.randn(args.batch, args.seq, args.d_model, device="cuda", generator=generator)
    return model, optimizer, inputs, targets


def train(torch, args, model, optimizer, inputs, targets):
    losses, step_ms = [], []
    for step in range(args.steps):
        if args.wait_file and step == args.steps - 1:
            wait_for(args.wait_file)
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(inputs), targets)  # line: forward
        loss.backward()
        optimizer.step()  # line: optimizer_step
        losses.append(loss.item())  # waits for the step's work
        step_ms.append((time.perf_counter() - start) * 1e3)
        if args.progress:
            emit(event="step", step=step)
        if args.wait_file and step == args.ready_step:
            emit(event="ready", pid=os.getpid())
    return losses, step_ms


def wait_for(path):
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


def free_training_state(torch, objects):
    """Drops the model, the optimizer and the data, and the cuBLAS(Lt) workspaces: PyTorch keeps one per
    handle and stream, allocated through its own allocator, that neither `del` nor torch.cuda.empty_cache()
    frees, so they would stay reserved through every flush."""
    objects.clear()
    gc.collect()
    torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.synchronize()


def flush_own_cache(torch, cli, objects):
    """Check 3: after del + empty_cache, PyTorch's segments sit in the shim's pool; a flush returns them."""
    reserved = torch.cuda.memory_reserved()
    free_training_state(torch, objects)
    torch.cuda.empty_cache()
    free_before, _ = torch.cuda.mem_get_info()
    used_before = device_used_bytes(torch)
    ok, released, error = run_flush(cli)
    free_after, _ = torch.cuda.mem_get_info()
    used_after = device_used_bytes(torch)
    return {
        "ok": ok,
        "error": error,
        "released_bytes": released,
        "reserved_before_empty_cache": reserved,
        "mem_get_info_free_gain": free_after - free_before,
        "nvml_used_drop": outside_view.drop(used_before, used_after),
    }


def deep_flush(torch, cli, objects):
    """After del (and no empty_cache), `vramshim flush --deep` asks PyTorch to empty its own cache,
    then flushes the shim's pool: PyTorch reserves nothing afterwards and the device's used memory drops."""
    free_training_state(torch, objects)
    reserved_before = torch.cuda.memory_reserved()
    allocated_before = torch.cuda.memory_allocated()
    used_before = device_used_bytes(torch)
    status, text = outside_view.run_cli(cli, "flush", "--deep")
    used_after = device_used_bytes(torch)
    return {
        "ok": status == 0,
        "cli_output": text[-400:],
        "empty_cache_ran": "torch.cuda.empty_cache ran" in text,
        "reserved_before": reserved_before,
        "allocated_before": allocated_before,
        "reserved_after": torch.cuda.memory_reserved(),
        "nvml_used_drop": outside_view.drop(used_before, used_after),
    }


def flush_async_pool(torch, cli, objects):
    """Check 5 (backend:cudaMallocAsync): freed tensors stay in the driver's stream-ordered pool (PyTorch sets
    its release threshold to the maximum); a flush must trim that pool."""
    free_training_state(torch, objects)
    held = 8 * 64 * MIB
    blocks = [torch.empty(64 * MIB, dtype=torch.uint8, device="cuda") for _ in range(8)]
    del blocks
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    ok, released, error = run_flush(cli)
    free_after, _ = torch.cuda.mem_get_info()
    return {"ok": ok, "error": error, "released_bytes": released, "held_bytes": held, "free_gain": free_after - free_before}


def main():
    args = parse_args()
    if args.deterministic:
        # cuBLAS reads this when it creates its first handle; without it its matmuls are not deterministic
        # (and warn_only below merely warns). Only here: the benchmark times cuBLAS as a user's job runs it.
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    try:
        import torch
    except Exception as error:
        emit(event="error", error=f"cannot import torch: {error}")
        return 3
    if not torch.cuda.is_available():
        emit(event="error", error="torch.cuda.is_available() is False")
        return 3
    if args.record_snapshot:
        # Python frames only: the snapshot is committed as test data and must stay a few MiB.
        torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
    model, optimizer, inputs, targets = build(torch, args)
    losses, step_ms = train(torch, args, model, optimizer, inputs, targets)
    if args.record_snapshot:
        torch.cuda.memory._dump_snapshot(args.record_snapshot)
        torch.cuda.memory._record_memory_history(enabled=None)
    timed = step_ms[args.warmup :] or step_ms
    result = {
        "event": "result",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "no_caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", ""),
        "losses": [value.hex() for value in losses],
        "step_ms": statistics.median(timed),
        "step_ms_all": [round(value, 4) for value in step_ms],
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
    }
    objects = [model, optimizer, inputs, targets]
    del model, optimizer, inputs, targets
    if args.after == "empty-cache-flush":
        result["flush"] = flush_own_cache(torch, args.cli, objects)
    elif args.after == "async-flush":
        result["flush"] = flush_async_pool(torch, args.cli, objects)
    elif args.after == "deep-flush":
        result["flush"] = deep_flush(torch, args.cli, objects)
    emit(**result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
