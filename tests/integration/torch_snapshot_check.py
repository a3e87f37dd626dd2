"""Checks a PyTorch memory snapshot (a pickle) against the structure PyTorch documents and its
viewer reads, and compares its totals with a vramshim report's.

The structure is written from torch.cuda.memory._snapshot()'s documentation (torch/cuda/memory.py),
the code that writes it (torch/csrc/cuda/memory_snapshot.cpp) and what the viewer reads
(torch/utils/viz/MemoryViz.js, torch/cuda/_memory_viz.py). The viewer's "Allocator State History"
walks each device's trace backwards from the segments, and draws every block inside a segment:
replay() does the same walk and fails where the viewer would. A block pending at the end has had
its free requested, not completed (check_pending).

    torch_snapshot_check.py SNAPSHOT [--report REPORT.json] [--expect-direct KIND:BYTES ...]
                            [--same-totals OTHER_SNAPSHOT] [--devices N]
"""

import argparse
import json
import pickle
import sys

FRAME = {"filename": str, "line": int, "name": str}
BLOCK = {"address": int, "size": int, "requested_size": int, "state": str, "frames": list}
BLOCK_STATES = {"active_allocated", "active_pending_free", "inactive"}
SEGMENT = {
    "device": int, "address": int, "total_size": int, "allocated_size": int, "active_size": int,
    "requested_size": int, "stream": int, "segment_type": str, "segment_pool_id": tuple,
    "is_expandable": bool, "frames": list, "blocks": list,
}
SEGMENT_TYPES = {"small", "large"}
ENTRY = {"action": str, "size": int, "stream": int, "time_us": int, "frames": list}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom", "snapshot"}
SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": str, "max_split_size": int,
            "garbage_collection_threshold": float, "expandable_segments": bool}

failures = []


def fail(where, why):
    failures.append(f"{where}: {why}")


def has_fields(value, fields, where):
    if not isinstance(value, dict):
        fail(where, f"is a {type(value).__name__}, not a dict")
        return False
    ok = True
    for key, kind in fields.items():
        if key not in value:
            fail(where, f"has no {key!r}")
            ok = False
        # bool is an int in Python; an int field must not be a bool.
        elif not isinstance(value[key], kind) or (kind is int and isinstance(value[key], bool)):
            fail(where, f"{key!r} is a {type(value[key]).__name__}, not a {kind.__name__}")
            ok = False
    return ok


def check_frames(frames, where):
    for i, frame in enumerate(frames):
        has_fields(frame, FRAME, f"{where}.frames[{i}]")


def check_structure(snapshot, devices):
    if not isinstance(snapshot, dict):
        fail("snapshot", f"is a {type(snapshot).__name__}, not a dict")
        return
    for key, kind in (("segments", list), ("device_traces", list), ("allocator_settings", dict)):
        if not isinstance(snapshot.get(key), kind):
            fail("snapshot", f"{key!r} missing or not a {kind.__name__}")
            return
    has_fields(snapshot["allocator_settings"], SETTINGS, "allocator_settings")
    traces = snapshot["device_traces"]
    if devices is not None and len(traces) != devices:
        fail("device_traces", f"{len(traces)} devices, expected {devices}")
    for s, seg in enumerate(snapshot["segments"]):
        where = f"segments[{s}]"
        if not has_fields(seg, SEGMENT, where):
            continue
        if seg["segment_type"] not in SEGMENT_TYPES:
            fail(where, f"segment_type {seg['segment_type']!r}")
        pool = seg["segment_pool_id"]
        if len(pool) != 2 or not all(isinstance(x, int) for x in pool):
            fail(where, "segment_pool_id is not a tuple of two ints")
        if not 0 <= seg["device"] < len(traces):
            fail(where, f"device {seg['device']} has no device_traces entry")
        check_frames(seg["frames"], where)
        address, allocated, active, requested = seg["address"], 0, 0, 0
        for b, block in enumerate(seg["blocks"]):
            at = f"{where}.blocks[{b}]"
            if not has_fields(block, BLOCK, at):
                continue
            check_frames(block["frames"], at)
            if block["state"] not in BLOCK_STATES:
                fail(at, f"state {block['state']!r}")
            if block["address"] != address:
                fail(at, f"address {block['address']:#x}, the blocks do not tile the segment")
            if block["size"] <= 0 or block["requested_size"] > block["size"]:
                fail(at, f"size {block['size']}, requested {block['requested_size']}")
            address += block["size"]
            if block["state"] == "active_allocated":
                allocated += block["size"]
                requested += block["requested_size"]
            if block["state"] != "inactive":
                active += block["size"]
        if address - seg["address"] != seg["total_size"]:
            fail(where, f"blocks add up to {address - seg['address']}, not {seg['total_size']}")
        for key, value in (("allocated_size", allocated), ("active_size", active),
                           ("requested_size", requested)):
            if seg[key] != value:
                fail(where, f"{key} {seg[key]}, its blocks say {value}")
    for d, trace in enumerate(traces):
        if not isinstance(trace, list):
            fail(f"device_traces[{d}]", "is not a list")
            continue
        last_time = None
        for i, entry in enumerate(trace):
            where = f"device_traces[{d}][{i}]"
            if not has_fields(entry, ENTRY, where):
                continue
            if entry["action"] not in ACTIONS:
                fail(where, f"action {entry['action']!r}")
            key = "device_free" if entry["action"] == "oom" else "addr"
            if not isinstance(entry.get(key), int):
                fail(where, f"no int {key!r}")
            check_frames(entry["frames"], where)
            if last_time is not None and entry["time_us"] < last_time:
                fail(where, "time_us goes back")
            last_time = entry["time_us"]


def check_pending(snapshot):
    """A block pending at the end (active_pending_free) has had its free requested, not completed:
    its address's last entry in the trace, if it has one, is a free_requested; and it keeps its
    allocation's requested size and frames, as PyTorch's do (the viewer draws it by them)."""
    for device, trace in enumerate(snapshot["device_traces"]):
        last = {}
        allocation = {}
        for i, e in enumerate(trace):
            if e["action"] in ("alloc", "free_requested", "free_completed"):
                last[e["addr"]] = (i, e["action"])
            if e["action"] == "alloc":
                allocation[e["addr"]] = e
        for s in snapshot["segments"]:
            if s["device"] != device:
                continue
            for b in s["blocks"]:
                if b["state"] == "active_pending_free" and b["address"] in last:
                    i, action = last[b["address"]]
                    if action != "free_requested":
                        fail(f"device_traces[{device}][{i}]",
                             f"{action} of {b['address']:#x}, a block still pending at the end")
                if b["state"] == "active_pending_free" and b["address"] in allocation:
                    alloc = allocation[b["address"]]
                    if b["requested_size"] != alloc["size"] or b["frames"] != alloc["frames"]:
                        fail(f"pending block {b['address']:#x}",
                             f"requested_size {b['requested_size']} and {len(b['frames'])} frames, "
                             f"its allocation's {alloc['size']} and {len(alloc['frames'])}")


def map_piece(segments, address, size):
    """The viewer's map_segment(merge=True): the piece joins the segments it touches."""
    segments[address] = size
    for base in sorted(segments):
        if base in segments:
            while base + segments[base] in segments:
                segments[base] += segments.pop(base + segments[base])


def unmap_piece(segments, address, size):
    """The viewer's unmap_segment(merge=True): cuts the piece out of the segment holding it; false
    when none holds all of it (the viewer's TypeError)."""
    for base, total in segments.items():
        if base <= address and address + size <= base + total:
            del segments[base]
            if base < address:
                segments[base] = address - base
            if address + size < base + total:
                segments[address + size] = base + total - address - size
            return True
    return False


def replay(snapshot):
    """MemoryViz.js's simulate_memory for every device, from the end back to the start."""
    for device, trace in enumerate(snapshot["device_traces"]):
        segments = {s["address"]: s["total_size"] for s in snapshot["segments"]
                    if s["device"] == device}
        blocks = {}
        for s in snapshot["segments"]:
            if s["device"] != device:
                continue
            for b in s["blocks"]:
                if b["state"] in ("active_allocated", "active_pending_free"):
                    blocks[b["address"]] = [b["size"], b["state"] == "active_pending_free"]

        def check(step):
            for address in blocks:
                if not any(0 <= address - base < size for base, size in segments.items()):
                    fail(f"device_traces[{device}] before entry {step}",
                         f"block {address:#x} lies in no segment (the viewer stops here)")
                    return False
            return True

        if not check(len(trace)):
            continue
        for i in range(len(trace) - 1, -1, -1):
            e = trace[i]
            where = f"device_traces[{device}][{i}]"
            action = e["action"]
            if action == "free_completed":
                blocks[e["addr"]] = [e["size"], True]
            elif action == "free_requested":
                if e["addr"] not in blocks:
                    fail(where, f"free_requested of {e['addr']:#x}, no such block")
                    break
                blocks[e["addr"]][1] = False
            elif action == "alloc":
                blocks.pop(e["addr"], None)
            elif action == "segment_free":
                segments[e["addr"]] = e["size"]
            elif action == "segment_alloc":
                if e["addr"] not in segments:
                    fail(where, f"segment_alloc of {e['addr']:#x}, not a segment then")
                    break
                del segments[e["addr"]]
            elif action == "segment_unmap":
                map_piece(segments, e["addr"], e["size"])
            elif action == "segment_map" and not unmap_piece(segments, e["addr"], e["size"]):
                fail(where, f"segment_map of {e['addr']:#x}, in no segment then (the viewer stops)")
                break
            if not check(i):
                break


def totals(snapshot, pool_only):
    """Per device: requested bytes of allocated blocks, and reserved bytes."""
    result = {}
    for s in snapshot["segments"]:
        if pool_only and "vramshim_kind" in s:
            continue
        t = result.setdefault(s["device"], [0, 0, 0])
        t[0] += s["requested_size"]
        t[1] += s["total_size"]
        t[2] += s["allocated_size"]
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("snapshot")
    parser.add_argument("--report", help="the vramshim report it was exported from")
    parser.add_argument("--expect-direct", action="append", default=[],
                        help="KIND:BYTES, a segment of its own expected for memory outside the pool")
    parser.add_argument("--same-totals", help="another snapshot whose totals must be the same")
    parser.add_argument("--devices", type=int, help="the number of device_traces expected")
    args = parser.parse_args()
    with open(args.snapshot, "rb") as f:
        snapshot = pickle.load(f)
    check_structure(snapshot, args.devices)
    if not failures:
        check_pending(snapshot)
        replay(snapshot)
    if not failures and args.report:
        with open(args.report) as f:
            report = json.load(f)
        got = totals(snapshot, pool_only=True)
        for d in report["devices"]:
            in_use, reserved, _ = got.get(d["device"], [0, 0, 0])
            if (in_use, reserved) != (d["in_use_bytes"], d["reserved_bytes"]):
                fail(f"device {d['device']}",
                     f"snapshot: {in_use} B requested in {reserved} B of segments; report: "
                     f"{d['in_use_bytes']} B in use, {d['reserved_bytes']} B reserved")
        direct = sorted((s["vramshim_kind"], s["total_size"]) for s in snapshot["segments"]
                        if "vramshim_kind" in s)
        expected = sorted((k, int(b)) for k, b in (e.split(":") for e in args.expect_direct))
        if direct != expected:
            fail("segments", f"outside the pool: {direct}, expected {expected}")
    if not failures and args.same_totals:
        with open(args.same_totals, "rb") as f:
            other = pickle.load(f)
        if totals(snapshot, False) != totals(other, False):
            fail("totals", f"{totals(snapshot, False)} != {totals(other, False)} of {args.same_totals}")
    for line in failures[:20]:
        print("FAIL:", line, file=sys.stderr)
    if failures:
        sys.exit(1)
    entries = sum(len(t) for t in snapshot["device_traces"])
    print(f"ok: {len(snapshot['segments'])} segments, {entries} trace entries, "
          f"totals {totals(snapshot, False)}")


if __name__ == "__main__":
    main()
