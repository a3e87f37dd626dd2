"""The GPU benchmark (started by bench/gpu/run.sh, which compiles alloc_pair_latency first).

1. The training step of docs/design.md (tests/gpu/workloads/torch_train.py), one subprocess per configuration:
   PyTorch's own allocator; PYTORCH_NO_CUDA_MEMORY_CACHING=1 alone; and caching off under the shim with stacks
   all (with Python frames, the default, and without them: the Python frames' ratio), off and sample:1MiB. Median step time after warm-up steps; peak reserved bytes as PyTorch counts them
   (its own allocator) or as the shim's report counts them (under the shim).
2. The cudaMalloc+cudaFree pair latency at 512 B, 2 MiB, 20 MiB and 256 MiB, without and with the shim.
Prints markdown tables with ratios to PyTorch's own allocator and writes them, with the raw figures, to a JSON
file.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

import bench_table

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_CHECK = os.path.join(HERE, "..", "..", "tests", "gpu")
TRAIN = os.path.join(GPU_CHECK, "workloads", "torch_train.py")
sys.path.insert(0, GPU_CHECK)
import verdicts  # noqa: E402 (this and the next are found through the path set just above)
from clean_environment import clean_environment  # noqa: E402

BASE_ENV = clean_environment(os.environ)

PAIR_SIZES = [512, 2 << 20, 20 << 20, 256 << 20]

CONFIGURATIONS = [
    ("PyTorch caching allocator", {}, False),
    ("PYTORCH_NO_CUDA_MEMORY_CACHING=1", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, False),
    ("caching off + shim, stacks all", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "VRAMSHIM_STACKS": "all"}, True),
    (
        "caching off + shim, stacks all, Python frames off",
        {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "VRAMSHIM_STACKS": "all", "VRAMSHIM_PYTHON": "off"},
        True,
    ),
    ("caching off + shim, stacks off", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "VRAMSHIM_STACKS": "off"}, True),
    (
        "caching off + shim, stacks sample:1MiB",
        {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "VRAMSHIM_STACKS": "sample:1MiB"},
        True,
    ),
]


def run(argv, env, timeout):
    """(returncode, stdout, stderr); the whole process group is killed at the timeout."""
    # errors="replace": a stray non-UTF-8 byte in a program's output must not end the benchmark.
    process = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=max(1.0, timeout))
        return process.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:  # bounded: a descendant outside the group could keep the pipes open
            stdout, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.wait()
            stdout, stderr = "", ""
        return None, stdout, stderr


def train(name, extra_env, under_shim, args, deadline):
    row = {"name": name, "step_ms": None, "peak_reserved_bytes": None, "note": ""}
    remaining = deadline - time.monotonic()
    if remaining < 10:
        row["note"] = "skipped: time budget spent"
        return row
    env = dict(BASE_ENV, **extra_env)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    report = os.path.join(args.work, f"bench-{slug}.report.json")
    if os.path.exists(report):  # a stale report must not stand in for one this run failed to write
        os.unlink(report)
    if under_shim:
        env.update(LD_PRELOAD=args.shim, VRAMSHIM_REPORT=report)
    argv = [sys.executable, TRAIN, "--steps", str(args.warmup + args.steps), "--warmup", str(args.warmup)]
    code, stdout, stderr = run(argv, env, min(45, remaining))
    result = verdicts.last_json_event(verdicts.json_events(stdout), "result")
    failure = verdicts.last_json_event(verdicts.json_events(stdout), "error")
    notes = []
    if code is None:
        notes.append("timed out")
    elif result is None:
        notes.append(f"failed: exit {code}: " + (failure["error"] if failure else verdicts.last_error_line(stderr)))
    else:
        row["step_ms"] = result["step_ms"]
        row["torch"] = result.get("torch")
        row["peak_reserved_bytes"] = result["peak_reserved_bytes"] if not under_shim else None
        row["torch_peak_reserved_bytes"] = result["peak_reserved_bytes"]
        if code != 0:
            notes.append(f"exit {code} after its result: {verdicts.last_error_line(stderr)}")
    if under_shim and row["step_ms"] is not None:
        try:
            with open(report) as file:
                devices = json.load(file)["devices"]
            row["peak_reserved_bytes"] = sum(int(device.get("peak_reserved_bytes") or 0) for device in devices)
        except (OSError, ValueError, KeyError) as error:
            notes.append(f"no shim report: {error}")
    if row["step_ms"] is not None and not under_shim and extra_env.get("PYTORCH_NO_CUDA_MEMORY_CACHING"):
        notes.append("peak as PyTorch counts it with caching off")
    row["note"] = "; ".join(notes)
    return row


def pair_latency(args, deadline):
    binary = os.path.join(args.bin, "alloc_pair_latency")
    if not os.access(binary, os.X_OK):
        return {}, {}, "alloc_pair_latency was not built"
    argv = [binary, str(args.pairs), *map(str, PAIR_SIZES)]
    results, notes = [], []
    for env in (dict(BASE_ENV), dict(BASE_ENV, LD_PRELOAD=args.shim, VRAMSHIM_REPORT="off")):
        code, stdout, stderr = run(argv, env, min(60, deadline - time.monotonic()))
        results.append(bench_table.parse_pairs(stdout))
        if code != 0:
            why = verdicts.last_error_line(stderr)
            notes.append(f"{'with' if 'LD_PRELOAD' in env else 'without'} shim: exit {code}: {why}")
    return results[0], results[1], "; ".join(notes)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shim", required=True)
    parser.add_argument("--bin", required=True, help="folder of the compiled alloc_pair_latency")
    parser.add_argument("--work", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument("--steps", type=int, default=40, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=200, help="pairs per batch (5 batches per size)")
    parser.add_argument("--budget", type=float, default=75, help="seconds for the whole benchmark")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    deadline = time.monotonic() + args.budget

    without, with_shim, pair_note = pair_latency(args, deadline)
    rows = [train(name, env, under_shim, args, deadline) for name, env, under_shim in CONFIGURATIONS]

    print(f"## Training step ({args.steps} timed steps after {args.warmup} warm-up, median)\n")
    print(bench_table.training_table(rows))
    print("\n## cudaMalloc+cudaFree pair (static cudart; median of 5 batches of %d pairs)\n" % args.pairs)
    print(bench_table.pair_table(without, with_shim))
    if pair_note:
        print(f"\nnote: {pair_note}")
    with open(args.json, "w") as file:
        json.dump({"training": rows, "pairs": {"without": without, "with_shim": with_shim}, "note": pair_note}, file, indent=1)
    print(f"\nresults: {args.json}")
    failures = [row for row in rows if row["step_ms"] is None] + ([1] if pair_note else [])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
