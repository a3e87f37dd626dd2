"""Markdown tables of the GPU benchmark (bench/gpu/bench.py): pure formatting, tested by bench_table_test.py."""

import re

MIB = 1 << 20

_PAIR_LINE = re.compile(r"^pair bytes=(\d+) us=([0-9.]+)$")


def parse_pairs(stdout):
    """{bytes: microseconds per pair} from alloc_pair_latency's `pair bytes=S us=X` lines."""
    pairs = {}
    for line in stdout.splitlines():
        match = _PAIR_LINE.match(line.strip())
        if match:
            pairs[int(match.group(1))] = float(match.group(2))
    return pairs


def human_bytes(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _ratio(value, reference):
    if value is None or not reference:
        return "–"
    return f"{value / reference:.2f}"


def _number(value, fmt):
    return "–" if value is None else format(value, fmt)


def training_table(rows):
    """rows: [{"name", "step_ms" or None, "peak_reserved_bytes" or None, "note"}]; the first row is the
    reference (PyTorch's own allocator) of both ratio columns."""
    reference = rows[0] if rows else {}
    lines = [
        "| configuration | median step (ms) | ratio | peak reserved (MiB) | ratio | note |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        peak = row.get("peak_reserved_bytes")
        lines.append(
            "| {} | {} | {} | {} | {} | {} |".format(
                row["name"],
                _number(row.get("step_ms"), ".2f"),
                _ratio(row.get("step_ms"), reference.get("step_ms")),
                _number(None if peak is None else peak / MIB, ".0f"),
                _ratio(peak, reference.get("peak_reserved_bytes")),
                row.get("note", "").replace("|", "/"),  # a "|" would end the cell
            )
        )
    return "\n".join(lines)


def pair_table(without, with_shim):
    """without, with_shim: parse_pairs() results of the same sizes."""
    lines = ["| size | without shim (µs) | with shim (µs) | speedup |", "|---|---|---|---|"]
    for size in sorted(set(without) | set(with_shim)):
        plain, pooled = without.get(size), with_shim.get(size)
        speedup = "–" if plain is None or not pooled else f"{plain / pooled:.0f}x"
        lines.append(f"| {human_bytes(size)} | {_number(plain, '.2f')} | {_number(pooled, '.3f')} | {speedup} |")
    return "\n".join(lines)
