"""Tests of bench_table.py on recorded outputs. Run: `bash bench/gpu/run.sh --self-test`."""

import unittest

import bench_table

MIB = 1 << 20


class BenchTableTest(unittest.TestCase):
    def test_parse_pairs(self):
        out = "pair bytes=512 us=81.250\npair bytes=268435456 us=297.000\nnoise\n"
        self.assertEqual(bench_table.parse_pairs(out), {512: 81.25, 268435456: 297.0})

    def test_training_ratios_are_to_the_first_row(self):
        table = bench_table.training_table(
            [
                {"name": "pytorch", "step_ms": 7.5, "peak_reserved_bytes": 1000 * MIB},
                {"name": "shim, stacks all", "step_ms": 7.875, "peak_reserved_bytes": 1050 * MIB},
                {"name": "failed", "step_ms": None, "peak_reserved_bytes": None, "note": "timed out"},
            ]
        )
        lines = table.splitlines()
        self.assertEqual(lines[2], "| pytorch | 7.50 | 1.00 | 1000 | 1.00 |  |")
        self.assertEqual(lines[3], "| shim, stacks all | 7.88 | 1.05 | 1050 | 1.05 |  |")
        self.assertEqual(lines[4], "| failed | – | – | – | – | timed out |")

    def test_a_note_cannot_split_its_cell(self):
        table = bench_table.training_table([{"name": "x", "step_ms": None, "note": "exit 1: a | b"}])
        self.assertEqual(table.splitlines()[2], "| x | – | – | – | – | exit 1: a / b |")

    def test_pair_table(self):
        table = bench_table.pair_table({512: 80.0, 2 * MIB: 90.0}, {512: 0.5})
        self.assertIn("| 512 B | 80.00 | 0.500 | 160x |", table)
        self.assertIn("| 2 MiB | 90.00 | – | – |", table)


if __name__ == "__main__":
    unittest.main()
