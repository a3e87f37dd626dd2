#!/usr/bin/env python3
"""Writes the pickles the trace reader's tests read, with Python's own pickle module.

    make_trace_fixtures.py OUT_DIR

plain_p{2,3,4,5}.pickle and large_p{2,3,4,5}.pickle: SAMPLE and LARGE (below), as each protocol
writes them; pickle_reader_test.cc checks the values it reads against these. refused_*.pickle:
what the reader must refuse. snapshot_*.pickle: small PyTorch memory snapshots, valid and broken,
for torch_snapshot_test.cc and replay_test.sh, and small files that share values to make huge
ones, for snapshot_expansion_test.sh.
"""

import os
import pickle
import sys

SHARED = {"shared": True}
SAMPLE = {
    "none": None,
    "true": True,
    "false": False,
    "ints": [0, 1, 255, 256, 65535, 65536, -1, -256, 2**31 - 1, -(2**31), 2**31, 2**32,
             2**63 - 1, -(2**63)],
    "floats": [0.1, -1.5e300],
    "str": "h\u00e9llo \u2713 \U0001f600 \ud800",
    "bytes": b"\x00\xffab",
    "empty_bytes": b"",
    "tuples": [(), (1,), (1, "two"), (1, 2, 3), (1, 2, 3, 4)],
    "shared": [SHARED, SHARED],
    "nested": {"a": {"b": [{"c": 3}]}},
    (1, "tuple key"): "tuple as key",
    5: "int key",
}
# Past one APPENDS batch (1000 items) and past a frame (64 KiB), so written outside frames.
LARGE = {
    "many": list(range(1500)),
    "long_str": "x" * 70000,
    "long_bytes": bytes(range(256)) * 300,
}


class Anything:
    pass


class RunsACommand:
    def __reduce__(self):
        return (os.system, ("echo pickle ran code",))


def self_containing_list():
    items = []
    items.append(items)
    return items


def deep_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def event(action, addr, size, time_us):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": time_us,
            "frames": [{"filename": "train.py", "name": "step", "line": 7}]}


MIB = 1 << 20
SEGMENT = 0x7F0000000000
# segment_alloc, three allocations in it, frees, an oom and a snapshot marker: in use peaks at
# 512 + 2048 = 2560 bytes (requests rounded up to 512 B), PyTorch reserves 2 MiB.
VALID_EVENTS = [
    event("segment_alloc", SEGMENT, 2 * MIB, 1),
    event("alloc", SEGMENT, 1000, 2),
    event("alloc", SEGMENT + 1024, 500, 3),
    event("free_requested", SEGMENT, 1000, 4),
    event("free_completed", SEGMENT, 1000, 5),
    event("alloc", SEGMENT + 1536, 2048, 6),
    {"action": "oom", "device_free": 0, "size": 80 << 30, "stream": 0, "time_us": 7,
     "frames": []},
    event("snapshot", 0, 0, 8),
    event("free_requested", SEGMENT + 1024, 500, 9),
    event("free_completed", SEGMENT + 1024, 500, 10),
]


def snapshot(events, **extra):
    result = {"segments": [], "device_traces": [[], events], "allocator_settings": {}}
    result.update(extra)
    return result


def with_event(index, replacement):
    events = list(VALID_EVENTS)
    events[index] = replacement
    return snapshot(events)


def shared_blocks_snapshot():
    """Under 1 MB, yet 10^10 blocks to a reader that walks every reference as a copy: one segment
    listed 10^5 times, listing one block (no address: each follows the one before) 10^5 times."""
    block = {"size": 512, "requested_size": 0, "state": "inactive"}
    segment = {"device": 0, "address": SEGMENT, "total_size": 512 * 100000,
               "blocks": [block] * 100000}
    return {"segments": [segment] * 100000, "device_traces": []}


def shared_events_snapshot():
    """6 * 10^9 trace events: one event listed 10^5 times, that list listed 60000 times."""
    oom = {"action": "oom", "device_free": 0, "size": 1024, "stream": 0, "time_us": 1,
           "frames": []}
    return {"segments": [], "device_traces": [[oom] * 100000] * 60000}


def many_devices_snapshot():
    """A segment on each of 65536 devices, and 10^6 segment_allocs on one: the import once
    added up every device's cached bytes after each event."""
    blocks = [{"size": 512, "requested_size": 0, "state": "inactive"}]
    segments = [{"device": device, "address": SEGMENT, "total_size": 512, "blocks": blocks}
                for device in range(65536)]
    # The trace first, so that its event is early in the memo and each reference to it short.
    return {"device_traces": [[event("segment_alloc", SEGMENT, 512, 1)] * 1000000],
            "segments": segments}


def more_devices_snapshot():
    """One allocation on each of 65537 devices, one more than there are device numbers: replay once
    replayed 495,000 such devices from a file under 1 MB (1.7 GB, a minute, 287 MB printed)."""
    return {"segments": [], "device_traces": [[event("alloc", SEGMENT, 512, 1)]] * 65537}


def window_snapshot():
    """A history that begins after the allocator's first events (max_entries reached, or recording
    started late): frees of allocations and a segment made before it, and a block allocated before
    it that is still allocated at the snapshot."""
    other = SEGMENT + 4 * MIB
    blocks = [{"address": SEGMENT, "size": 1024, "requested_size": 1000,
               "state": "active_allocated"},
              {"address": SEGMENT + 1024, "size": 512, "requested_size": 500,
               "state": "active_allocated"},
              {"address": SEGMENT + 1536, "size": 2 * MIB - 1536, "requested_size": 0,
               "state": "inactive"}]
    segments = [{"device": 1, "address": SEGMENT, "total_size": 2 * MIB, "blocks": blocks,
                 "is_expandable": False}]
    events = [event("free_requested", SEGMENT + 4096, 700, 1),
              event("free_completed", SEGMENT + 4096, 700, 2),
              event("alloc", SEGMENT + 1024, 500, 3),
              event("segment_free", other, 2 * MIB, 4),
              event("free_completed", SEGMENT + 8192, 300, 5)]
    return {"segments": segments, "device_traces": [[], events]}


def expandable_window_snapshot():
    """An expandable segment of 40 MiB at the snapshot, 20 MiB of it mapped by the history (which
    also unmaps and maps again 10 MiB): the other 20 MiB were mapped before it began."""
    base = SEGMENT
    blocks = [{"address": base, "size": 40 * MIB, "requested_size": 0, "state": "inactive"}]
    segments = [{"device": 0, "address": base, "total_size": 40 * MIB, "blocks": blocks,
                 "is_expandable": True}]
    events = [event("segment_map", base + 20 * MIB, 20 * MIB, 1),
              event("alloc", base + 20 * MIB, 4096, 2),
              event("free_completed", base + 20 * MIB, 4096, 3),
              event("segment_unmap", base + 30 * MIB, 10 * MIB, 4),
              event("segment_map", base + 30 * MIB, 10 * MIB, 5)]
    return {"segments": segments, "device_traces": [events]}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    def write(name, value, protocol=4):
        with open(os.path.join(out, name), "wb") as f:
            pickle.dump(value, f, protocol=protocol)

    for protocol in (2, 3, 4, 5):
        write(f"plain_p{protocol}.pickle", SAMPLE, protocol)
        write(f"large_p{protocol}.pickle", LARGE, protocol)
    write("refused_global.pickle", RunsACommand(), 2)
    write("refused_stack_global.pickle", RunsACommand(), 4)
    write("refused_object.pickle", Anything(), 4)
    write("refused_set.pickle", {"set": {1, 2}}, 4)
    write("refused_bytearray.pickle", bytearray(b"abc"), 5)
    write("refused_protocol0.pickle", SAMPLE, 0)
    write("refused_protocol1.pickle", SAMPLE, 1)
    write("refused_self_containing.pickle", self_containing_list(), 4)
    write("refused_deep.pickle", deep_list(100), 4)

    write("snapshot_valid.pickle", snapshot(VALID_EVENTS))
    write("snapshot_unknown_action.pickle", with_event(5, event("allocate", SEGMENT, 64, 6)))
    # The allocation at SEGMENT freed twice (a free of an address the history never saw is of an
    # allocation made before it began).
    write("snapshot_unknown_free.pickle",
          with_event(5, event("free_completed", SEGMENT, 1000, 6)))
    write("snapshot_window.pickle", window_snapshot())
    write("snapshot_window_expandable.pickle", expandable_window_snapshot())
    write("snapshot_double_alloc.pickle", with_event(5, event("alloc", SEGMENT + 1024, 64, 6)))
    # A second segment starting inside the first: the driver never hands memory out twice.
    write("snapshot_overlapping_segments.pickle",
          with_event(1, event("segment_alloc", SEGMENT + MIB, 2 * MIB, 2)))
    write("snapshot_empty_segment.pickle", with_event(0, event("segment_alloc", SEGMENT, 0, 1)))
    write("snapshot_missing_addr.pickle",
          with_event(1, {"action": "alloc", "size": 1000, "stream": 0, "time_us": 2}))
    write("snapshot_string_size.pickle", with_event(1, event("alloc", SEGMENT, "1000", 2)))
    crowded = dict(VALID_EVENTS[1], **{f"field{i}": i for i in range(40)})
    write("snapshot_many_fields.pickle", with_event(1, crowded))
    # Five allocations, then five segments, of 2^48 bytes each, alive at once (with one freed
    # between, which makes room for no sixth): more than 2^50, more than a device holds.
    huge = 1 << 48
    freed = [event("alloc", SEGMENT, huge, 1), event("free_completed", SEGMENT, huge, 2)]
    write("snapshot_live_over_a_device.pickle",
          snapshot(freed + [event("alloc", SEGMENT + i * huge, huge, 3 + i) for i in range(5)]))
    write("snapshot_reserved_over_a_device.pickle",
          snapshot([event("segment_alloc", SEGMENT, huge, 1), event("segment_free", SEGMENT, huge, 2)]
                   + [event("segment_alloc", SEGMENT + i * huge, huge, 3 + i) for i in range(5)]))
    write("snapshot_no_history.pickle", snapshot([]))
    write("snapshot_not_a_dict.pickle", [VALID_EVENTS])
    write("snapshot_shared_blocks.pickle", shared_blocks_snapshot())
    write("snapshot_shared_events.pickle", shared_events_snapshot())
    write("snapshot_many_devices.pickle", many_devices_snapshot())
    write("snapshot_more_devices.pickle", more_devices_snapshot())


if __name__ == "__main__":
    main()
