#!/usr/bin/env python3
"""Writes a PyTorch memory snapshot of a simulated training run, for `vramshim replay`.

The file has the shape `torch.cuda.memory._dump_snapshot()` writes after
`torch.cuda.memory._record_memory_history()` (a pickle of {"segments", "device_traces",
"allocator_settings"}), until one recorded on a GPU replaces it. The workload is shaped like the
pool's unit-test workload (tests/unit/pool/training_workload.cc): steps of an 8-layer network whose
tensors are 512 B to 64 MiB (log-uniform), activations kept for the backward pass, temporaries,
gradients freed by the optimizer in another order; plus what a real run keeps: the weights, Adam's
two state tensors per weight from the first optimizer step on, and an input batch per step.
Gradients are used on a second stream, so PyTorch completes their frees only at its next
allocation.

Addresses and segments come from a simulation of PyTorch's caching allocator
(c10/cuda/CUDACachingAllocator.cpp, default settings): requests rounded up to 512 B; requests up to
1 MiB served from 2 MiB segments, up to 10 MiB from 20 MiB ones, larger ones from segments of the
request rounded up to 2 MiB; best fit by size, then address; a block split when the rest is at
least 512 B (small pool) or more than 1 MiB (large pool); freed blocks coalesced with free
neighbours; segments never freed (no out-of-memory, no empty_cache).

Deterministic: only random.Random(seed).random() is drawn, whose sequence Python keeps stable.

    python3 bench/traces/generate_snapshot.py bench/traces/training_snapshot.pickle
"""

import argparse
import bisect
import math
import pickle
import random

MIB = 1 << 20
SMALL_SIZE = 1 * MIB  # kSmallSize
SMALL_BUFFER = 2 * MIB  # kSmallBuffer
LARGE_BUFFER = 20 * MIB  # kLargeBuffer
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc
ROUND_LARGE = 2 * MIB  # kRoundLarge
MIN_BLOCK = 512  # kMinBlockSize

LAYERS = 8
ACTIVATIONS_PER_LAYER = 4
FORWARD_TEMPORARIES = 4
BACKWARD_TEMPORARIES = 6
WEIGHTS_PER_LAYER = 4
OPTIMIZER_TEMPORARIES = 31
SIDE_STREAM = 0x5A5A000  # the stream gradients are used on (a cudaStream_t, as PyTorch records it)
START_TIME_US = 1_750_000_000_000_000


def round_size(size):
    return MIN_BLOCK if size < MIN_BLOCK else (size + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK


def allocation_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class Block:
    __slots__ = ("addr", "size", "requested", "allocated", "prev", "next", "small")

    def __init__(self, addr, size, small):
        self.addr, self.size, self.small = addr, size, small
        self.requested, self.allocated, self.prev, self.next = 0, False, None, None


class CachingAllocator:
    """PyTorch's caching allocator, on one stream, recording trace entries as PyTorch does."""

    def __init__(self, frames_of):
        self.frames_of = frames_of
        self.pools = {True: [], False: []}  # small? -> sorted [(size, addr, block)]
        self.segments = []  # the first block of each: merges keep the lower block
        self.next_segment = 0x7F2A00000000
        self.deferred = []  # blocks freed while a side stream may still use them
        self.trace = []
        self.time_us = START_TIME_US

    def record(self, action, addr, size, role):
        self.time_us += 3
        self.trace.append(
            {
                "action": action,
                "addr": addr,
                "size": size,
                "stream": 0,
                "time_us": self.time_us,
                "frames": self.frames_of(role),
            }
        )

    def malloc(self, requested, role):
        # Like process_events(): frees waiting for the side stream complete first.
        for block in self.deferred:
            self.free_block(block, "gradient")
        self.deferred = []
        size = round_size(requested)
        small = size <= SMALL_SIZE
        pool = self.pools[small]
        at = bisect.bisect_left(pool, (size, 0))
        if at < len(pool):
            block = pool.pop(at)[2]
        else:
            segment_size = allocation_size(size)
            block = Block(self.next_segment, segment_size, small)
            self.segments.append(block)
            self.next_segment += segment_size + ROUND_LARGE
            self.record("segment_alloc", block.addr, segment_size, role)
        remaining = block.size - size
        if (remaining >= MIN_BLOCK) if small else (remaining > SMALL_SIZE):
            rest = Block(block.addr + size, remaining, small)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next, block.size = rest, size
            bisect.insort(pool, (rest.size, rest.addr, rest))
        block.allocated, block.requested = True, requested
        self.record("alloc", block.addr, requested, role)
        return block

    def free(self, block, role, on_side_stream=False):
        self.record("free_requested", block.addr, block.requested, role)
        if on_side_stream:
            self.deferred.append(block)
        else:
            self.free_block(block, role)

    def free_block(self, block, role):
        self.record("free_completed", block.addr, block.requested, role)
        block.allocated = False
        pool = self.pools[block.small]
        if block.next is not None and not block.next.allocated:
            pool.remove((block.next.size, block.next.addr, block.next))
            self.absorb_next(block)
        if block.prev is not None and not block.prev.allocated:
            block = block.prev
            pool.remove((block.size, block.addr, block))
            self.absorb_next(block)
        bisect.insort(pool, (block.size, block.addr, block))

    @staticmethod
    def absorb_next(block):
        absorbed = block.next
        block.size += absorbed.size
        block.next = absorbed.next
        if absorbed.next is not None:
            absorbed.next.prev = block

    def segments_snapshot(self, frames):
        """The "segments" list of the snapshot: the allocator's state at the end."""
        segments = []
        for first in self.segments:
            blocks, block = [], first
            while block is not None:
                blocks.append(
                    {
                        "address": block.addr,
                        "size": block.size,
                        "requested_size": block.requested if block.allocated else 0,
                        "state": "active_allocated" if block.allocated else "inactive",
                        "frames": frames if block.allocated else [],
                    }
                )
                block = block.next
            allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
            segments.append(
                {
                    "device": 0,
                    "address": first.addr,
                    "total_size": sum(b["size"] for b in blocks),
                    "allocated_size": allocated,
                    "active_size": allocated,
                    "requested_size": sum(b["requested_size"] for b in blocks),
                    "stream": 0,
                    "segment_type": "small" if first.small else "large",
                    "segment_pool_id": (0, 0),
                    "is_expandable": False,
                    "frames": [],
                    "blocks": blocks,
                }
            )
        return segments


class TrainingRun:
    """The program: which tensors it allocates and frees, in which order."""

    def __init__(self, seed, allocator):
        self.rng = random.Random(seed)
        self.allocator = allocator
        self.drawn = 0
        self.weight_sizes = self.draw_sizes(LAYERS * WEIGHTS_PER_LAYER)
        self.activation_sizes = self.draw_sizes(ACTIVATIONS_PER_LAYER)
        self.forward_sizes = self.draw_sizes(FORWARD_TEMPORARIES)
        self.backward_sizes = self.draw_sizes(BACKWARD_TEMPORARIES)
        self.optimizer_sizes = self.draw_sizes(OPTIMIZER_TEMPORARIES)
        self.batch_size = self.draw_sizes(1)[0]
        self.weights = [allocator.malloc(size, "parameter") for size in self.weight_sizes]
        self.optimizer_state = []

    def uniform(self, n):
        return min(int(self.rng.random() * n), n - 1)

    def shuffled(self, items):
        items = list(items)
        for i in range(len(items) - 1, 0, -1):
            j = self.uniform(i + 1)
            items[i], items[j] = items[j], items[i]
        return items

    def draw_sizes(self, count):
        """Log-uniform over 512 B .. 64 MiB, multiples of 4; the first two pin the ends."""
        sizes = []
        for _ in range(count):
            if self.drawn == 0:
                sizes.append(64 * MIB)
            elif self.drawn == 1:
                sizes.append(512)
            else:
                low, high = math.log(512.0), math.log(64.0 * MIB)
                sizes.append(int(math.exp(low + (high - low) * self.rng.random())) & ~3)
            self.drawn += 1
        return sizes

    def interleave(self, sizes, role):
        """Allocates temporaries, freeing earlier ones at random points, the rest at the end."""
        live = []
        for size in sizes:
            live.append(self.allocator.malloc(size, role))
            while len(live) > 1 and self.rng.random() < 0.5:
                self.allocator.free(live.pop(self.uniform(len(live))), role)
        for block in self.shuffled(live):
            self.allocator.free(block, role)

    def step(self):
        malloc, free = self.allocator.malloc, self.allocator.free
        batch = malloc(self.batch_size, "batch")
        activations = []
        for _ in range(LAYERS):
            activations.append([malloc(size, "activation") for size in self.activation_sizes])
            self.interleave(self.forward_sizes, "forward")
        gradients = []
        for layer in reversed(range(LAYERS)):
            self.interleave(self.backward_sizes, "backward")
            first = layer * WEIGHTS_PER_LAYER
            for size in self.weight_sizes[first : first + WEIGHTS_PER_LAYER]:
                gradients.append(malloc(size, "gradient"))
            for block in self.shuffled(activations[layer]):
                free(block, "activation")
        if not self.optimizer_state:  # Adam's exp_avg and exp_avg_sq, made at the first step
            for size in self.weight_sizes:
                self.optimizer_state += [malloc(size, "optimizer"), malloc(size, "optimizer")]
        gradients = self.shuffled(gradients)
        for size in self.optimizer_sizes:
            free(malloc(size, "optimizer"), "optimizer")
            if gradients:
                free(gradients.pop(), "gradient", on_side_stream=True)
        for block in gradients:
            free(block, "gradient", on_side_stream=True)
        free(batch, "batch")


def frames_by_role():
    """One shared frames list per kind of tensor, as PyTorch symbolizes each stack once."""
    lines = {"parameter": 31, "batch": 58, "activation": 64, "forward": 66, "backward": 71,
             "gradient": 72, "optimizer": 80}
    return {
        role: [
            {"filename": "train.py", "name": role, "line": line},
            {"filename": "train.py", "name": "main", "line": 95},
        ]
        for role, line in lines.items()
    }


def snapshot(seed, steps):
    frames = frames_by_role()
    allocator = CachingAllocator(frames.__getitem__)
    run = TrainingRun(seed, allocator)
    for _ in range(steps):
        run.step()
    return {
        "segments": allocator.segments_snapshot(frames["parameter"]),
        "device_traces": [allocator.trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0, "expandable_segments": False},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="snapshot file to write")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    with open(args.output, "wb") as f:
        pickle.dump(snapshot(args.seed, args.steps), f, protocol=4)


if __name__ == "__main__":
    main()
