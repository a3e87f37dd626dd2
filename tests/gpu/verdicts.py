"""Pass/fail judgements of the real-GPU check (tests/gpu/run.sh), one function per check.

Every function here is pure: it takes what a check's programs printed (parsed lines, a report document, the
result objects of the workload scripts) and returns a Verdict. gpu_checks.py runs the programs; this file
decides. verdicts_test.py feeds these functions recorded outputs, so the judging logic is tested on machines
without a GPU.
"""

import json
import math
import re
from dataclasses import dataclass, field

# Check 1: at most this many driver allocations for 10,000 cudaMalloc/cudaFree pairs.
MAX_DRIVER_ALLOCATIONS = 2
# Check 1: the pool must make a pair at least this many times faster than the driver.
MIN_SPEEDUP = 50.0
# Check 3: step time under the shim, as a ratio to the run without it.
MAX_STEP_RATIO = 1.01
# Checks 4, 5, 8: relative loss difference accepted where the losses are not bitwise equal.
LOSS_RTOL = 1e-5
# Check 7: the limit and the band in which PyTorch must run out of memory.
LIMIT_BYTES = 2 << 30
MIN_BYTES_AT_OOM = LIMIT_BYTES * 3 // 4
# Checks 3 and 5: a flush must give back at least this share of what it should release.
MIN_RELEASED_SHARE = 0.5
# Check 4: of the top sites, at least this many must name an ATen function.
TOP_SITES = 5
PYTHON_TOP_SITES = 10  # c9 looks deeper: gradients and parameters hold no script frames

MIB = 1 << 20
# The recorded snapshot is committed as test data (bench/traces/): a few MiB at most.
MAX_SNAPSHOT_BYTES = 8 * MIB


@dataclass
class Verdict:
    passed: bool
    text: str  # the figure when passed, the reason when failed
    details: dict = field(default_factory=dict)


def passed(text, **details):
    return Verdict(True, text, details)


def failed(text, **details):
    return Verdict(False, text, details)


# ---------------------------------------------------------------- parsing program output


_PROGRAM_LINE = re.compile(r"^(alloc_loop|driver_alloc_loop) pairs=(\d+) bytes=(\d+) us_per_pair=([0-9.]+)$")
_CALLS_LINE = re.compile(r"^vramshim: calls(?: |$)(.*)$")


def parse_alloc_loop(stdout):
    """The `alloc_loop …` / `driver_alloc_loop …` line as a dict, or None."""
    for line in stdout.splitlines():
        match = _PROGRAM_LINE.match(line.strip())
        if match:
            return {"pairs": int(match.group(2)), "bytes": int(match.group(3)), "us_per_pair": float(match.group(4))}
    return None


def parse_hook_calls(stderr):
    """The shim's `vramshim: calls NAME=N …` line (VRAMSHIM_LOG=debug, at exit) as {name: count}."""
    calls = {}
    for line in stderr.splitlines():
        match = _CALLS_LINE.match(line.strip())
        if match:
            for item in match.group(1).split():
                name, _, count = item.partition("=")
                if count.isdigit():
                    calls[name] = calls.get(name, 0) + int(count)
    return calls


def parse_flush_output(stdout):
    """Bytes released per pid from `vramshim flush PID…` (`PID: released 1.5 GiB (N bytes)`)."""
    released = {}
    for line in stdout.splitlines():
        match = re.match(r"^(\d+): released .*\((\d+) bytes\)$", line.strip())
        if match:
            released[int(match.group(1))] = int(match.group(2))
    return released


def last_error_line(stderr):
    """The line of a failed program's stderr that best says why: its last line before the report is written
    (the shim's exit lines and `vramshim run`'s summary follow that), the program's own lines before the
    shim's `vramshim: …` lines, never the hook counts."""
    lines = []
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("vramshim: report "):
            break
        if line and not _CALLS_LINE.match(line):
            lines.append(line)
    own = [line for line in lines if not line.startswith("vramshim: ")]
    return (own or lines or [""])[-1]


def json_events(stdout):
    """The JSON objects among a workload script's output lines (its events)."""
    found = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass
    return found


def last_json_event(events, kind):
    """The last event of `kind` among the JSON objects a workload script printed, or None."""
    found = None
    for event in events:
        if isinstance(event, dict) and event.get("event") == kind:
            found = event
    return found


# ---------------------------------------------------------------- reading a shim report


def report_problem(report):
    """Why `report` is not a usable vramshim report, or None."""
    if report is None:
        return "no report written"
    if not isinstance(report, dict) or report.get("format") != "vramshim-report":
        return "not a vramshim report"
    if not isinstance(report.get("devices"), list):
        return "report has no devices list"
    return None


def unjudgeable_run(result, report, unfinished):
    """Why a workload script's run under the shim cannot be judged, or None: it printed no result
    (`unfinished`), its own correctness check failed, or its report is not usable."""
    if result is None:
        return unfinished
    if not result.get("correct"):
        return f"wrong result: {result.get('error', 'mismatch')}"
    return report_problem(report)


def device_total(report, key):
    return sum(int(device.get(key) or 0) for device in report.get("devices", []))


def sites_by_kind(report):
    """{kind: (total_count, total_bytes)} over the report's sites."""
    kinds = {}
    for site in report.get("sites", []):
        count, size = kinds.get(site.get("kind"), (0, 0))
        kinds[site.get("kind")] = (count + int(site.get("total_count") or 0), size + int(site.get("total_bytes") or 0))
    return kinds


def _is_aten(name):
    # dladdr names are mangled: at::native::empty_cuda → _ZN2at6native10empty_cudaE…
    return bool(name) and (name.startswith("_ZN2at") or name.startswith("_ZNK2at") or name.startswith("at::"))


def site_functions(report, site):
    """Function names of a site's stack, innermost first (None for frames without one)."""
    frames = {frame.get("id"): frame for frame in report.get("frames", [])}
    stacks = {stack.get("id"): stack for stack in report.get("stacks", [])}
    stack = stacks.get(site.get("stack"))
    if stack is None:
        return []
    return [frames.get(frame_id, {}).get("function") for frame_id in stack.get("frames", [])]


def top_sites_aten(report, top=TOP_SITES):
    """[(total_bytes, first ATen function or None)] for the `top` sites with the most bytes allocated."""
    sites = sorted(report.get("sites", []), key=lambda site: int(site.get("total_bytes") or 0), reverse=True)
    result = []
    for site in sites[:top]:
        aten = next((name for name in site_functions(report, site) if _is_aten(name)), None)
        result.append((int(site.get("total_bytes") or 0), aten))
    return result


def describe_kinds(kinds):
    return ",".join(f"{kind}:{count}" for kind, (count, _) in sorted(kinds.items(), key=lambda item: str(item[0])))


# ---------------------------------------------------------------- comparing losses


def compare_losses(reference, losses):
    """(equal, how): `how` is "bitwise" or "max rel diff X"; equal is False past LOSS_RTOL or on a mismatch."""
    if not reference or not losses:
        return False, "no losses"
    if len(reference) != len(losses):
        return False, f"{len(losses)} losses, expected {len(reference)}"
    if any(not math.isfinite(value) for value in losses):
        return False, "non-finite loss"
    if list(reference) == list(losses):
        return True, "bitwise"
    worst = max(abs(a - b) / max(abs(a), 1e-30) for a, b in zip(reference, losses))
    return worst <= LOSS_RTOL, f"max rel diff {worst:.2e}"


def losses_of(result):
    """The per-step losses of a torch_train.py result (stored as float.hex strings, so equality is exact)."""
    return [float.fromhex(value) for value in result.get("losses", [])]


# ---------------------------------------------------------------- the checks


def alloc_loop(without, with_shim, hooks, report, min_speedup=MIN_SPEEDUP):
    """Checks 1 and 2: `without`/`with_shim` are parse_alloc_loop() results of the same program."""
    if without is None:
        return failed("the program failed without the shim")
    if with_shim is None:
        return failed("the program failed under the shim")
    intercepted = sum(count for name, count in hooks.items() if name.startswith("cuMemAlloc"))
    if intercepted < with_shim["pairs"]:
        return failed(f"not intercepted: the shim's hooks saw {intercepted} allocations of {with_shim['pairs']}")
    problem = report_problem(report)
    if problem:
        return failed(problem)
    driver_allocations = device_total(report, "driver_alloc_calls")
    hits = device_total(report, "pool_hits")
    speedup = without["us_per_pair"] / max(with_shim["us_per_pair"], 1e-9)
    figure = (
        f"{with_shim['us_per_pair']:.3f} us/pair vs {without['us_per_pair']:.3f} without "
        f"({speedup:.0f}x), {driver_allocations} driver allocations, {hits} pool hits"
    )
    details = {
        "speedup": speedup,
        "driver_alloc_calls": driver_allocations,
        "pool_hits": hits,
        "hooked_allocations": intercepted,
    }
    # Few driver allocations prove pooling only if the report counted the pairs at all.
    if hits < with_shim["pairs"] - MAX_DRIVER_ALLOCATIONS:
        return failed(f"the report counts {hits} pool hits for {with_shim['pairs']} pairs: " + figure, **details)
    if driver_allocations > MAX_DRIVER_ALLOCATIONS:
        return failed(f"{driver_allocations} driver allocations (at most {MAX_DRIVER_ALLOCATIONS}): " + figure, **details)
    if speedup < min_speedup:
        return failed(f"only {speedup:.1f}x faster (at least {min_speedup:.0f}x): " + figure, **details)
    return passed(figure, **details)


def torch_own_allocator(baseline, result):
    """Check 3: PyTorch's own allocator under the shim versus without it, then a flush after empty_cache."""
    if result is None:
        return failed("the training run under the shim did not finish")
    equal, how = compare_losses(losses_of(baseline), losses_of(result))
    ratio = result["step_ms"] / baseline["step_ms"]
    flush = result.get("flush") or {}
    released = int(flush.get("released_bytes") or 0)
    expected = int(flush.get("reserved_before_empty_cache") or 0)
    nvml_drop = flush.get("nvml_used_drop")
    figure = (
        f"step {result['step_ms']:.2f} ms vs {baseline['step_ms']:.2f} ms ({ratio:.3f}x), loss {how}, "
        f"flush released {released // MIB} MiB of {expected // MIB} MiB"
    )
    if nvml_drop is not None:
        figure += f", device used -{int(nvml_drop) // MIB} MiB"
    details = {"step_ratio": ratio, "loss": how, "released_bytes": released, "nvml_used_drop": nvml_drop}
    if not equal:
        return failed("loss differs from PyTorch without the shim: " + figure, **details)
    if ratio > MAX_STEP_RATIO:
        return failed(f"step time {ratio:.3f}x (at most {MAX_STEP_RATIO}x): " + figure, **details)
    if not flush.get("ok"):
        return failed(f"flush failed: {flush.get('error', 'no answer')}", **details)
    if released < MIN_RELEASED_SHARE * expected or released == 0:
        return failed("flush released too little: " + figure, **details)
    if nvml_drop is not None and nvml_drop < MIN_RELEASED_SHARE * released:
        return failed("the device's used memory did not drop: " + figure, **details)
    return passed(figure, **details)


def torch_no_caching(baseline, result, report):
    """Check 4: PYTORCH_NO_CUDA_MEMORY_CACHING=1 under the shim: same losses, top sites name ATen functions."""
    if result is None:
        return failed("the training run under the shim did not finish")
    equal, how = compare_losses(losses_of(baseline), losses_of(result))
    problem = report_problem(report)
    if problem:
        return failed(problem + f" (loss {how})")
    top = top_sites_aten(report)
    named = [name for _, name in top if name]
    ratio = result["step_ms"] / baseline["step_ms"]
    figure = (
        f"loss {how} over {len(losses_of(result))} steps, step {result['step_ms']:.2f} ms ({ratio:.2f}x own allocator), "
        f"{len(named)}/{len(top)} top sites name ATen"
    )
    if named:
        figure += f" (top: {named[0][:60]})"
    details = {"loss": how, "step_ratio": ratio, "top_sites": top}
    if not equal:
        return failed("loss differs from PyTorch's own allocator: " + figure, **details)
    if not top or len(named) * 2 < len(top):
        return failed("the report's top sites do not name ATen functions: " + figure, **details)
    return passed(figure, **details)


def torch_async(baseline, result, report):
    """Check 5, backend:cudaMallocAsync: runs, attributed as async, a flush empties the driver's pool."""
    if result is None:
        return failed("the training run did not finish")
    problem = report_problem(report)
    if problem:
        return failed(problem)
    equal, how = compare_losses(losses_of(baseline), losses_of(result))
    kinds = sites_by_kind(report)
    async_count = kinds.get("async", (0, 0))[0]
    flush = result.get("flush") or {}
    held = int(flush.get("held_bytes") or 0)
    regained = int(flush.get("free_gain") or 0)
    figure = f"loss {how}, sites {describe_kinds(kinds)}, flush regained {regained // MIB} of {held // MIB} MiB"
    details = {"loss": how, "kinds": {str(k): v for k, v in kinds.items()}, "free_gain": regained}
    if not equal:
        return failed("loss differs from PyTorch's own allocator: " + figure, **details)
    if async_count == 0:
        return failed("no async allocation attributed: " + figure, **details)
    if not flush.get("ok"):
        return failed(f"flush failed: {flush.get('error', 'no answer')}", **details)
    if regained < MIN_RELEASED_SHARE * held:
        return failed("the flush did not return the stream-ordered pool's memory: " + figure, **details)
    return passed(figure, **details)


def torch_expandable(baseline, result, report):
    """Check 5, expandable_segments:True: runs, attributed as vmm."""
    if result is None:
        return failed("the training run did not finish")
    problem = report_problem(report)
    if problem:
        return failed(problem)
    equal, how = compare_losses(losses_of(baseline), losses_of(result))
    kinds = sites_by_kind(report)
    figure = f"loss {how}, sites {describe_kinds(kinds)}"
    details = {"loss": how, "kinds": {str(k): v for k, v in kinds.items()}}
    if not equal:
        return failed("loss differs from PyTorch's own allocator: " + figure, **details)
    if kinds.get("vmm", (0, 0))[0] == 0:
        return failed("no cuMemCreate attributed: " + figure, **details)
    return passed(figure, **details)


def framework_attributed(result, report, expected_kinds):
    """Check 6 (JAX, CuPy): the script's own correctness check passed and some expected kind is attributed."""
    unusable = unjudgeable_run(result, report, "the script did not finish")
    if unusable:
        return failed(unusable)
    kinds = sites_by_kind(report)
    figure = f"{result.get('framework', '')} {result.get('version', '')} on {result.get('device', '?')}, sites {describe_kinds(kinds)}"
    if not any(kinds.get(kind, (0, 0))[0] > 0 for kind in expected_kinds):
        return failed(f"no {'/'.join(expected_kinds)} allocation attributed: " + figure, kinds=describe_kinds(kinds))
    return passed(figure, kinds=describe_kinds(kinds))


def leading_site_of_oom_block(stderr):
    """The first line under "the sites holding the most:" of the shim's first out-of-memory block, or ""."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("vramshim:   the sites holding the most:") and i + 1 < len(lines):
            return lines[i + 1].strip()
    return ""


def torch_limit(result, stderr):
    """Check 7: under VRAMSHIM_LIMIT=2GiB, mem_get_info's total is 2 GiB, PyTorch's OOM comes at about 2 GiB,
    and the shim's out-of-memory block names the Python line that allocated the most."""
    if result is None:
        return failed("the script did not finish")
    total = int(result.get("total_bytes") or 0)
    reached = int(result.get("allocated_at_oom") or 0)
    figure = f"mem_get_info total {total / (1 << 30):.3f} GiB, OutOfMemoryError after {reached / (1 << 30):.3f} GiB"
    if total != LIMIT_BYTES:
        return failed("mem_get_info total is not 2 GiB: " + figure)
    if not result.get("oom_error"):
        return failed("no torch.cuda.OutOfMemoryError: " + figure)
    if not MIN_BYTES_AT_OOM <= reached <= LIMIT_BYTES:
        return failed("out of memory outside [1.5, 2] GiB: " + figure)
    if "vramshim: out of memory: " not in stderr:
        return failed("no out-of-memory block on stderr: " + figure)
    site = leading_site_of_oom_block(stderr)
    line = result.get("allocating_line", "")
    if not line or line not in site:
        return failed(f"the block's leading site is {site!r}, not {line}: " + figure)
    return passed(f"{figure}; the block names {site}")


def flush_midrun(baseline, result, signal_sent, cli_released, report, cli_error=""):
    """Check 8: kill -USR1 and `vramshim flush` mid-run; the run goes on and its losses are unchanged."""
    if not signal_sent:
        return failed("the process never reported it was running (no signal sent)")
    if result is None:
        return failed("the training run did not finish after the flush")
    if cli_released is None:
        return failed(f"vramshim flush gave no answer: {cli_error}")
    equal, how = compare_losses(losses_of(baseline), losses_of(result))
    figure = f"loss {how} after USR1 + vramshim flush (released {cli_released // MIB} MiB)"
    if report_problem(report) is None:
        figure += f", report: {device_total(report, 'released_by_flush_bytes') // MIB} MiB released by flushes"
    if not equal:
        return failed("loss changed: " + figure, loss=how)
    return passed(figure, loss=how)


# ---------------------------------------------------------------- Python-aware


def marked_lines(script_path):
    """{NAME: line} for the lines of a script marked "# line: NAME"."""
    lines = {}
    with open(script_path) as file:
        for number, text in enumerate(file, 1):
            if "# line: " in text:
                lines[text.split("# line: ", 1)[1].strip()] = number
    return lines


def python_frames_of(report, site):
    """(file, function, line) of a site's Python frames, innermost first."""
    frames = {frame.get("id"): frame for frame in report.get("frames", [])}
    stacks = {stack.get("id"): stack for stack in report.get("stacks", [])}
    stack = stacks.get(site.get("stack"), {})
    found = []
    for frame_id in stack.get("frames", []):
        frame = frames.get(frame_id, {})
        if frame.get("python"):
            found.append((frame.get("file") or "", frame.get("function") or "", frame.get("line")))
    return found


def python_lines(report, script_path, top=PYTHON_TOP_SITES):
    """On the GPU: with caching off, the top sites by bytes at the peak name the training script's
    lines: the model's forward call and the optimizer step. Sites without Python frames (backward runs on
    autograd's own thread, which executes no Python) are counted, not held against the check; every top
    site that has Python frames must reach the script."""
    problem = report_problem(report)
    if problem:
        return failed(problem)
    wanted = marked_lines(script_path)
    script = script_path.rsplit("/", 1)[-1]
    sites = sorted(report.get("sites", []), key=lambda site: int(site.get("bytes_at_peak") or 0), reverse=True)
    with_python, named, seen = 0, 0, set()
    for site in sites[:top]:
        frames = python_frames_of(report, site)
        lines = {line for file, _, line in frames if file.endswith(script)}
        with_python += bool(frames)
        named += bool(lines)
        seen |= {name for name, line in wanted.items() if line in lines}
    figure = (f"{named}/{with_python} top sites with Python frames name {script} "
              f"({min(top, len(sites)) - with_python} of the top {top} have none); "
              f"lines seen: {', '.join(sorted(seen)) or 'none'}")
    if named == 0 or named < with_python or not {"forward", "optimizer_step"} <= seen:
        return failed(figure, named=named, with_python=with_python, seen=sorted(seen))
    return passed(figure, named=named, with_python=with_python, seen=sorted(seen))


def deep_flush(result):
    """On the GPU: `vramshim flush --deep` after `del model` empties PyTorch's cache and the pool."""
    if result is None:
        return failed("the training run under the shim did not finish")
    flush = result.get("flush") or {}
    drop = flush.get("nvml_used_drop")
    before, after = int(flush.get("reserved_before") or 0), int(flush.get("reserved_after") or 0)
    figure = f"PyTorch reserved {before // MIB} MiB -> {after // MIB} MiB"
    if drop is not None:
        figure += f", device used -{int(drop) // MIB} MiB"
    if not flush.get("ok") or not flush.get("empty_cache_ran"):
        return failed("flush --deep: " + (flush.get("cli_output") or "no answer").strip()[-200:])
    if before == 0 or after != 0:
        still = int(flush.get("allocated_before") or 0)
        held = f" ({still // MIB} MiB still allocated)" if still else ""
        return failed("PyTorch's cache was not emptied: " + figure + held)
    if drop is not None and drop < MIN_RELEASED_SHARE * before:
        return failed("the device's used memory did not drop: " + figure)
    return passed(figure)


def snapshot_totals(snapshot):
    """What a PyTorch memory snapshot (a dict, as pickle.load gives it) holds: bytes requested by the
    active allocations, bytes of its segments, and its trace events."""
    segments = snapshot.get("segments") or []
    blocks = [block for segment in segments for block in segment.get("blocks") or []]
    return {
        "in_use": sum(block.get("requested_size", 0) for block in blocks if block.get("state") == "active_allocated"),
        "reserved": sum(segment.get("total_size", 0) for segment in segments),
        "events": sum(len(trace) for trace in snapshot.get("device_traces") or []),
    }


def torch_snapshot(recorded, imported, viewer):
    """Check 11: a memory snapshot recorded by PyTorch's own allocator (brought back as test data) is read by
    `vramshim import torch-snapshot` with the same totals, and PyTorch's viewer (`python -m
    torch.cuda._memory_viz`) reads `vramshim export --format torch-snapshot` of check 4's report.
    recorded: {"why"} or {"bytes", "totals"}; imported: {"why"} or {"in_use", "reserved"}; viewer: a list of
    (subcommand, why or "")."""
    if recorded.get("why"):
        return failed("recording the snapshot: " + recorded["why"])
    totals = recorded["totals"]
    figure = (f"snapshot {recorded['bytes'] / MIB:.1f} MiB, {totals['events']} events, "
              f"{totals['in_use'] // MIB} MiB in use, {totals['reserved'] // MIB} MiB reserved")
    if recorded["bytes"] > MAX_SNAPSHOT_BYTES:
        return failed(f"the snapshot is larger than {MAX_SNAPSHOT_BYTES // MIB} MiB: " + figure)
    if totals["events"] == 0:
        return failed("the snapshot has no trace events: " + figure)
    if imported.get("why"):
        return failed("vramshim import: " + imported["why"] + "; " + figure)
    if (imported["in_use"], imported["reserved"]) != (totals["in_use"], totals["reserved"]):
        return failed(f"the imported report holds {imported['in_use']} B in use, {imported['reserved']} B "
                      f"reserved; the snapshot {totals['in_use']} B, {totals['reserved']} B")
    refused = [f"{command}: {why}" for command, why in viewer if why]
    if refused:
        return failed("torch.cuda._memory_viz on the export: " + "; ".join(refused))
    return passed(figure + "; import equal; _memory_viz " + ", ".join(command for command, _ in viewer) +
                  " read the export")


def sites_naming_script(report, script_path):
    """(sites, bytes they allocated, marked lines seen) of the sites whose Python frames reach the script."""
    wanted = marked_lines(script_path)
    script = script_path.rsplit("/", 1)[-1]
    count, size, seen = 0, 0, set()
    for site in report.get("sites", []):
        lines = {line for file, _, line in python_frames_of(report, site) if file.endswith(script)}
        if lines:
            count += 1
            size += int(site.get("total_bytes") or 0)
            seen |= {name for name, line in wanted.items() if line in lines}
    return count, size, seen


def keras_fit(result, report, script_path):
    """Check 12: Keras 3 on JAX (platform allocator) fits under the shim with predictions equal to NumPy's
    forward pass, its allocations name the script's lines, and after `del model`,
    `keras.backend.clear_session()` and `vramshim flush --deep` NVML's used memory drops by at least half of
    what the flush released."""
    unusable = unjudgeable_run(result, report, "the Keras run under the shim did not finish")
    if unusable:
        return failed(unusable)
    count, size, seen = sites_naming_script(report, script_path)
    flush = result.get("flush") or {}
    released, drop = flush.get("released_bytes"), flush.get("nvml_used_drop")
    losses = result.get("losses") or [0.0]
    figure = (f"keras {result.get('version', '?')} (jax {result.get('jax', '?')}) on {result.get('device', '?')}: "
              f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; {count} sites ({size // MIB} MiB) name "
              f"{script_path.rsplit('/', 1)[-1]} (lines {', '.join(sorted(seen)) or 'none'}), "
              f"sites {describe_kinds(sites_by_kind(report))}; flush --deep released "
              f"{(released or 0) // MIB} MiB, device used -{(drop or 0) // MIB} MiB")
    if not flush.get("ok") or released is None:
        return failed("flush --deep: " + (flush.get("cli_output") or "no answer").strip()[-200:])
    if count == 0:
        return failed("no allocation names the script (JAX allocated on threads running no Python?): " + figure)
    if released == 0:
        return failed("the flush released nothing (JAX's buffers still live, or not freed to the pool): " + figure)
    if drop is None:
        return failed("no NVML reading of the device's used memory: " + figure)
    if drop < MIN_RELEASED_SHARE * released:
        return failed("the device's used memory did not drop: " + figure)
    return passed(figure, sites=count, released=released, drop=drop)


# Check 13: the libraries whose own device buffers the report must attribute (module basename prefixes;
# libcublas also covers libcublasLt).
LIBRARIES = ("libnccl", "libcublas")


def library_sites(report, library):
    """(sites, bytes they allocated) of the sites whose stack has a native frame in a module `library*`."""
    modules = {module.get("id"): (module.get("path") or "").rsplit("/", 1)[-1] for module in report.get("modules", [])}
    frames = {frame.get("id"): frame for frame in report.get("frames", [])}
    stacks = {stack.get("id"): stack for stack in report.get("stacks", [])}
    count, size = 0, 0
    for site in report.get("sites", []):
        for frame_id in stacks.get(site.get("stack"), {}).get("frames", []):
            frame = frames.get(frame_id, {})
            if not frame.get("python") and modules.get(frame.get("module"), "").startswith(library):
                count += 1
                size += int(site.get("total_bytes") or 0)
                break
    return count, size


def report_view_bytes(stdout):
    """The bytes ever allocated by the sites `vramshim report … --format json` lists, or None."""
    try:
        sites = json.loads(stdout)["sites"]
        return sum(int(site.get("total_bytes") or 0) for site in sites)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def backward_labels(stdout):
    """Check 9: the sites of check 4's report that the backward pass made (autograd's own thread runs
    no Python and no code of the user's) are named by their autograd node (`torch::autograd::…::apply`,
    as MmBackward0), not by PyTorch's allocator, which every such stack starts with."""
    try:
        sites = json.loads(stdout)["sites"]
        labels = [str(((site.get("label") or {}).get("function")) or "") for site in sites]
    except (ValueError, KeyError, TypeError, AttributeError):
        return failed("`vramshim report --format json` gave no sites")
    nodes = sorted({label for label in labels if label.startswith("torch::autograd::") and "::apply(" in label})
    allocator = [label for label in labels if label.startswith("c10::cuda::")]
    figure = f"{len(nodes)} autograd nodes name sites, {len(allocator)} of {len(labels)} sites named by c10's allocator"
    if nodes:
        figure += f" (first: {nodes[0][:70]})"
    if not nodes:
        return failed("no site is named by an autograd node: " + figure, labels=labels[:20])
    return passed(figure, nodes=nodes[:20], allocator=allocator[:20])


def library_buffers(result, report, shown):
    """Check 13: under PYTORCH_NO_CUDA_MEMORY_CACHING=1, an NCCL all-reduce and a cuBLAS matmul give the
    host's answers; the report attributes device memory to libnccl and libcublas frames, and
    `vramshim report --module LIB` shows the same bytes. shown: {library: bytes, or why the CLI failed}."""
    unusable = unjudgeable_run(result, report, "the run under the shim did not finish")
    if unusable:
        return failed(unusable)
    parts, problems = [], []
    for library in LIBRARIES:
        count, size = library_sites(report, library)
        parts.append(f"{library}: {count} sites, {size / MIB:.1f} MiB")
        view = shown.get(library)
        if count == 0:
            problems.append(f"no site has a {library} frame")
        elif not isinstance(view, int):
            problems.append(f"vramshim report --module {library}: {view}")
        elif view != size:
            problems.append(f"vramshim report --module {library} shows {view} B, the report's sites {size} B")
    figure = f"torch {result.get('torch', '?')}, NCCL {result.get('nccl', '?')}: " + "; ".join(parts)
    if problems:
        return failed("; ".join(problems) + " (" + figure + ")")
    return passed(figure)
