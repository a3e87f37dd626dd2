"""Tests of the real-GPU check's pass/fail logic on recorded outputs (no GPU needed).

Run: `bash tests/gpu/run.sh --self-test` (or `python3 -m unittest verdicts_test` in tests/gpu).
The program lines and report fragments below were recorded from the programs and the shim against
tests/fakecuda; the PyTorch result objects follow torch_train.py's output.
"""

import json
import os
import unittest

import verdicts

MIB = 1 << 20

ALLOC_LOOP_WITHOUT = "alloc_loop pairs=10000 bytes=1048576 us_per_pair=84.210\n"
ALLOC_LOOP_WITH = "alloc_loop pairs=10000 bytes=1048576 us_per_pair=0.912\n"
CALLS = (
    "vramshim: calls cuMemAlloc_v2=10001 cuMemFree_v2=10001 cuDevicePrimaryCtxRetain=1 "
    "cuDevicePrimaryCtxRelease_v2=1\n"
)


def report(driver_alloc_calls=1, sites=None, frames=None, stacks=None, released_by_flush=0, pool_hits=10000):
    return {
        "format": "vramshim-report",
        "version": 1,
        "devices": [
            {
                "device": 0,
                "driver_alloc_calls": driver_alloc_calls,
                "pool_hits": pool_hits,
                "released_by_flush_bytes": released_by_flush,
            }
        ],
        "sites": sites or [],
        "frames": frames or [],
        "stacks": stacks or [],
    }


def train_result(losses, step_ms=7.5, flush=None):
    result = {"event": "result", "losses": [float(value).hex() for value in losses], "step_ms": step_ms}
    if flush is not None:
        result["flush"] = flush
    return result


BASE_LOSSES = [1.25, 1.125, 1.0625, 1.03125]


class ParsingTest(unittest.TestCase):
    def test_alloc_loop_line(self):
        parsed = verdicts.parse_alloc_loop("noise\n" + ALLOC_LOOP_WITH)
        self.assertEqual(parsed, {"pairs": 10000, "bytes": 1048576, "us_per_pair": 0.912})
        self.assertIsNone(verdicts.parse_alloc_loop("alloc_loop: cudaFree(0) failed: cudaErrorNoDevice\n"))

    def test_hook_calls_line(self):
        calls = verdicts.parse_hook_calls("some warning\n" + CALLS)
        self.assertEqual(calls["cuMemAlloc_v2"], 10001)
        self.assertEqual(calls["cuDevicePrimaryCtxRelease_v2"], 1)
        self.assertEqual(verdicts.parse_hook_calls("vramshim: calls\n"), {})

    def test_flush_output(self):
        out = "4242: released 1.5 GiB (1610612736 bytes)\n4243: released 0 B (0 bytes)\n"
        self.assertEqual(verdicts.parse_flush_output(out), {4242: 1610612736, 4243: 0})

    def test_last_error_line(self):
        traceback = 'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: CUDA out of memory\n'
        shim_exit = "vramshim: report written to /tmp/r.json\n" + CALLS
        run_summary = "vramshim: report /tmp/r.json\nheld at the peak:\ndetails:  vramshim report /tmp/r.json\n"
        self.assertEqual(verdicts.last_error_line(traceback + shim_exit), "RuntimeError: CUDA out of memory")
        self.assertEqual(verdicts.last_error_line(traceback + run_summary), "RuntimeError: CUDA out of memory")
        self.assertEqual(
            verdicts.last_error_line("vramshim: control socket disabled: no room\n" + CALLS),
            "vramshim: control socket disabled: no room",
        )
        self.assertEqual(verdicts.last_error_line(CALLS), "")

    def test_json_events_skip_other_lines(self):
        stdout = 'loading\n{"event": "step", "step": 0}\n{not json\n{"event": "result", "n": 1}\n'
        self.assertEqual([event["event"] for event in verdicts.json_events(stdout)], ["step", "result"])

    def test_last_event(self):
        events = [{"event": "step", "step": 0}, {"event": "result", "n": 1}, {"event": "result", "n": 2}]
        self.assertEqual(verdicts.last_json_event(events, "result")["n"], 2)
        self.assertIsNone(verdicts.last_json_event(events, "error"))


class AllocLoopTest(unittest.TestCase):
    def judge(self, without=ALLOC_LOOP_WITHOUT, with_shim=ALLOC_LOOP_WITH, calls=CALLS, doc="default"):
        return verdicts.alloc_loop(
            verdicts.parse_alloc_loop(without),
            verdicts.parse_alloc_loop(with_shim),
            verdicts.parse_hook_calls(calls),
            report() if doc == "default" else doc,
        )

    def test_pool_served_and_fast_passes(self):
        verdict = self.judge()
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("92x", verdict.text)
        self.assertIn("1 driver allocations", verdict.text)

    def test_too_many_driver_allocations_fails(self):
        verdict = self.judge(doc=report(driver_alloc_calls=10001))
        self.assertFalse(verdict.passed)
        self.assertIn("10001 driver allocations", verdict.text)

    def test_a_report_that_counted_no_pairs_fails(self):
        for doc in (report(pool_hits=0), dict(report(), devices=[])):
            verdict = self.judge(doc=doc)
            self.assertFalse(verdict.passed)
            self.assertIn("pool hits for 10000 pairs", verdict.text)

    def test_too_slow_fails(self):
        verdict = self.judge(with_shim="alloc_loop pairs=10000 bytes=1048576 us_per_pair=4.0\n")
        self.assertFalse(verdict.passed)
        self.assertIn("only 21.1x", verdict.text)

    def test_not_intercepted_fails(self):
        verdict = self.judge(calls="vramshim: calls cuDevicePrimaryCtxRetain=1\n")
        self.assertFalse(verdict.passed)
        self.assertIn("not intercepted", verdict.text)

    def test_missing_report_fails(self):
        self.assertFalse(self.judge(doc=None).passed)
        self.assertFalse(self.judge(doc={"format": "other"}).passed)

    def test_failed_program_fails(self):
        self.assertFalse(self.judge(with_shim="").passed)


class LossTest(unittest.TestCase):
    def test_bitwise(self):
        self.assertEqual(verdicts.compare_losses(BASE_LOSSES, list(BASE_LOSSES)), (True, "bitwise"))

    def test_within_tolerance_says_how_much(self):
        equal, how = verdicts.compare_losses(BASE_LOSSES, [value * (1 + 2e-6) for value in BASE_LOSSES])
        self.assertTrue(equal)
        self.assertTrue(how.startswith("max rel diff 2.0"), how)

    def test_past_tolerance_or_nan_or_short(self):
        self.assertFalse(verdicts.compare_losses(BASE_LOSSES, [value * 1.001 for value in BASE_LOSSES])[0])
        self.assertFalse(verdicts.compare_losses(BASE_LOSSES, BASE_LOSSES[:-1] + [float("nan")])[0])
        self.assertFalse(verdicts.compare_losses(BASE_LOSSES, BASE_LOSSES[:2])[0])
        self.assertFalse(verdicts.compare_losses([], [])[0])

    def test_hex_round_trip_is_exact(self):
        self.assertEqual(verdicts.losses_of(train_result(BASE_LOSSES)), BASE_LOSSES)


class TorchOwnAllocatorTest(unittest.TestCase):
    FLUSH = {
        "ok": True,
        "released_bytes": 400 * MIB,
        "reserved_before_empty_cache": 420 * MIB,
        "nvml_used_drop": 398 * MIB,
    }

    def test_same_loss_same_speed_and_flush_passes(self):
        verdict = verdicts.torch_own_allocator(train_result(BASE_LOSSES), train_result(BASE_LOSSES, 7.52, self.FLUSH))
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("released 400 MiB of 420 MiB", verdict.text)

    def test_slower_fails(self):
        verdict = verdicts.torch_own_allocator(train_result(BASE_LOSSES), train_result(BASE_LOSSES, 7.7, self.FLUSH))
        self.assertFalse(verdict.passed)
        self.assertIn("1.027x", verdict.text)

    def test_flush_released_nothing_fails(self):
        flush = dict(self.FLUSH, released_bytes=0, nvml_used_drop=0)
        verdict = verdicts.torch_own_allocator(train_result(BASE_LOSSES), train_result(BASE_LOSSES, 7.5, flush))
        self.assertFalse(verdict.passed)

    def test_device_memory_not_returned_fails(self):
        flush = dict(self.FLUSH, nvml_used_drop=2 * MIB)
        verdict = verdicts.torch_own_allocator(train_result(BASE_LOSSES), train_result(BASE_LOSSES, 7.5, flush))
        self.assertFalse(verdict.passed)
        self.assertIn("did not drop", verdict.text)

    def test_flush_error_fails(self):
        flush = {"ok": False, "error": "cannot connect to /tmp/vramshim-0/1.sock"}
        verdict = verdicts.torch_own_allocator(train_result(BASE_LOSSES), train_result(BASE_LOSSES, 7.5, flush))
        self.assertFalse(verdict.passed)
        self.assertIn("cannot connect", verdict.text)


def aten_report():
    # Two sites: one reached through at::native::empty_cuda, one with no named frame.
    return report(
        sites=[
            {"stack": 0, "kind": "device", "total_bytes": 900 * MIB, "total_count": 90},
            {"stack": 1, "kind": "device", "total_bytes": 10 * MIB, "total_count": 1},
        ],
        frames=[
            {"id": 0, "module": 1, "offset": 10, "function": "_ZN3c104cuda29CUDACachingAllocator6Native"},
            {"id": 1, "module": 2, "offset": 20, "function": "_ZN2at6native10empty_cudaEN3c108ArrayRefIlEE"},
            {"id": 2, "module": -1, "offset": 30, "function": None},
        ],
        stacks=[{"id": 0, "frames": [0, 1]}, {"id": 1, "frames": [2]}],
    )


class TorchNoCachingTest(unittest.TestCase):
    def test_same_loss_and_aten_sites_passes(self):
        verdict = verdicts.torch_no_caching(train_result(BASE_LOSSES), train_result(BASE_LOSSES, 7.9), aten_report())
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("1/2 top sites name ATen", verdict.text)
        self.assertIn("_ZN2at6native10empty_cuda", verdict.text)

    def test_no_aten_frames_fails(self):
        doc = aten_report()
        doc["stacks"] = [{"id": 0, "frames": [2]}, {"id": 1, "frames": [2]}]
        verdict = verdicts.torch_no_caching(train_result(BASE_LOSSES), train_result(BASE_LOSSES), doc)
        self.assertFalse(verdict.passed)
        self.assertIn("do not name ATen", verdict.text)

    def test_changed_loss_fails(self):
        verdict = verdicts.torch_no_caching(
            train_result(BASE_LOSSES), train_result([value + 0.5 for value in BASE_LOSSES]), aten_report()
        )
        self.assertFalse(verdict.passed)


class TorchAllocConfTest(unittest.TestCase):
    def async_report(self):
        return report(sites=[{"stack": 0, "kind": "async", "total_bytes": 5 * MIB, "total_count": 400}])

    def test_async_attributed_and_flushed_passes(self):
        flush = {"ok": True, "held_bytes": 512 * MIB, "free_gain": 700 * MIB}
        verdict = verdicts.torch_async(train_result(BASE_LOSSES), train_result(BASE_LOSSES, flush=flush), self.async_report())
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("async:400", verdict.text)

    def test_async_pool_not_trimmed_fails(self):
        flush = {"ok": True, "held_bytes": 512 * MIB, "free_gain": 0}
        verdict = verdicts.torch_async(train_result(BASE_LOSSES), train_result(BASE_LOSSES, flush=flush), self.async_report())
        self.assertFalse(verdict.passed)
        self.assertIn("stream-ordered pool", verdict.text)

    def test_async_not_attributed_fails(self):
        flush = {"ok": True, "held_bytes": 512 * MIB, "free_gain": 700 * MIB}
        verdict = verdicts.torch_async(train_result(BASE_LOSSES), train_result(BASE_LOSSES, flush=flush), report())
        self.assertFalse(verdict.passed)

    def test_expandable_needs_vmm_sites(self):
        vmm = report(sites=[{"stack": 0, "kind": "vmm", "total_bytes": 40 * MIB, "total_count": 3}])
        self.assertTrue(verdicts.torch_expandable(train_result(BASE_LOSSES), train_result(BASE_LOSSES), vmm).passed)
        self.assertFalse(verdicts.torch_expandable(train_result(BASE_LOSSES), train_result(BASE_LOSSES), report()).passed)


class FrameworkTest(unittest.TestCase):
    RESULT = {"event": "result", "framework": "jax", "version": "0.11.0", "device": "NVIDIA H200", "correct": True}

    def test_correct_and_attributed_passes(self):
        doc = report(sites=[{"stack": 0, "kind": "vmm", "total_bytes": 100 << 30, "total_count": 1}])
        verdict = verdicts.framework_attributed(self.RESULT, doc, ["vmm", "device"])
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("vmm:1", verdict.text)

    def test_wrong_result_fails(self):
        result = dict(self.RESULT, correct=False, error="a result differs from NumPy's")
        self.assertFalse(verdicts.framework_attributed(result, report(), ["vmm"]).passed)

    def test_nothing_attributed_fails(self):
        self.assertFalse(verdicts.framework_attributed(self.RESULT, report(), ["vmm", "device"]).passed)


class LimitTest(unittest.TestCase):
    BLOCK = (
        "vramshim: out of memory: cuMemAlloc of 64.0 MiB (device memory) on device 0 failed\n"
        "vramshim:   verdict: limit: VRAMSHIM_LIMIT is 2.0 GiB and this process has 1.9 GiB in use\n"
        "vramshim:   the sites holding the most:\n"
        "vramshim:     1.9 GiB in 31 allocations  torch_limit.py:17 allocate_chunk\n"
        "vramshim:     2.0 MiB in 1 allocation  libtorch_cuda.so+0x1234\n"
    )

    def result(self, total=2 << 30, reached=31 * 64 * MIB, error="CUDA out of memory. Tried to allocate 64.00 MiB."):
        return {
            "event": "result",
            "total_bytes": total,
            "allocated_at_oom": reached,
            "oom_error": error,
            "allocating_line": "torch_limit.py:17",
        }

    def test_oom_at_the_limit_named_by_the_block_passes(self):
        verdict = verdicts.torch_limit(self.result(), self.BLOCK)
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("total 2.000 GiB", verdict.text)
        self.assertIn("torch_limit.py:17 allocate_chunk", verdict.text)

    def test_total_not_limited_fails(self):
        self.assertFalse(verdicts.torch_limit(self.result(total=150 << 30), self.BLOCK).passed)

    def test_oom_far_from_the_limit_fails(self):
        self.assertFalse(verdicts.torch_limit(self.result(reached=64 * MIB), self.BLOCK).passed)
        self.assertFalse(verdicts.torch_limit(self.result(reached=64 << 30, error=""), self.BLOCK).passed)

    def test_no_block_or_another_leading_site_fails(self):
        self.assertFalse(verdicts.torch_limit(self.result(), "").passed)
        other = self.BLOCK.replace("torch_limit.py:17 allocate_chunk", "libc10_cuda.so+0x99")
        self.assertFalse(verdicts.torch_limit(self.result(), other).passed)


class FlushMidrunTest(unittest.TestCase):
    def test_unchanged_loss_passes(self):
        doc = report(released_by_flush=300 * MIB)
        verdict = verdicts.flush_midrun(train_result(BASE_LOSSES), train_result(BASE_LOSSES), True, 200 * MIB, doc)
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("300 MiB released by flushes", verdict.text)

    def test_changed_loss_fails(self):
        changed = train_result([value * 1.01 for value in BASE_LOSSES])
        self.assertFalse(verdicts.flush_midrun(train_result(BASE_LOSSES), changed, True, 0, report()).passed)

    def test_no_flush_answer_fails(self):
        verdict = verdicts.flush_midrun(train_result(BASE_LOSSES), train_result(BASE_LOSSES), True, None, report(), "exit 1")
        self.assertFalse(verdict.passed)
        self.assertIn("exit 1", verdict.text)

    def test_never_signalled_fails(self):
        self.assertFalse(verdicts.flush_midrun(train_result(BASE_LOSSES), None, False, None, None).passed)


class PythonLinesTest(unittest.TestCase):
    """The caching-off report names the training script's forward and optimizer-step lines."""

    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads", "torch_train.py")

    def python_report(self, lines, files=None):
        """One site per entry of `lines`, largest first; a None line is a site without Python frames."""
        frames = [{"id": 0, "module": 0, "offset": 16, "function": "_ZN2at6native10empty_cudaEv"}]
        stacks, sites = [], []
        for index, line in enumerate(lines):
            stack = [0]
            if line is not None:
                file = (files or {}).get(index, "/x/torch_train.py")
                frames.append({"id": len(frames), "python": True, "file": file, "line": line, "function": "train"})
                stack.append(len(frames) - 1)
            stacks.append({"id": index, "frames": stack})
            sites.append({"stack": index, "kind": "device", "bytes_at_peak": (20 - index) * MIB,
                          "total_bytes": MIB})
        return report(sites=sites, frames=frames, stacks=stacks)

    def test_forward_and_optimizer_lines_pass(self):
        lines = verdicts.marked_lines(self.SCRIPT)
        verdict = verdicts.python_lines(self.python_report([lines["forward"], lines["optimizer_step"]]),
                                        self.SCRIPT)
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("2/2 top sites with Python frames name torch_train.py", verdict.text)

    def test_sites_without_python_frames_are_counted_not_failed(self):
        lines = verdicts.marked_lines(self.SCRIPT)
        verdict = verdicts.python_lines(
            self.python_report([None, lines["forward"], None, lines["optimizer_step"]]), self.SCRIPT)
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("(2 of the top 10 have none)", verdict.text)

    def test_python_frames_that_miss_the_script_fail(self):
        lines = verdicts.marked_lines(self.SCRIPT)
        verdict = verdicts.python_lines(
            self.python_report([lines["forward"], lines["optimizer_step"], 7], files={2: "/x/other.py"}),
            self.SCRIPT)
        self.assertFalse(verdict.passed)
        self.assertIn("2/3 top sites", verdict.text)

    def test_only_native_sites_fail(self):
        self.assertFalse(verdicts.python_lines(self.python_report([None, None]), self.SCRIPT).passed)

    def test_missing_optimizer_line_fails(self):
        lines = verdicts.marked_lines(self.SCRIPT)
        verdict = verdicts.python_lines(self.python_report([lines["forward"]]), self.SCRIPT)
        self.assertFalse(verdict.passed)
        self.assertIn("lines seen: forward", verdict.text)


class DeepFlushTest(unittest.TestCase):
    def flushed(self, **flush):
        values = {"ok": True, "empty_cache_ran": True, "reserved_before": 600 * MIB, "reserved_after": 0,
                  "nvml_used_drop": 580 * MIB, "cli_output": ""}
        values.update(flush)
        return train_result(BASE_LOSSES, flush=values)

    def test_emptied_cache_and_device_memory_pass(self):
        verdict = verdicts.deep_flush(self.flushed())
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("600 MiB -> 0 MiB", verdict.text)

    def test_cache_left_fails(self):
        self.assertFalse(verdicts.deep_flush(self.flushed(reserved_after=64 * MIB)).passed)

    def test_framework_step_not_run_fails(self):
        verdict = verdicts.deep_flush(self.flushed(empty_cache_ran=False, cli_output="no Python"))
        self.assertFalse(verdict.passed)
        self.assertIn("no Python", verdict.text)

    def test_device_memory_not_returned_fails(self):
        self.assertFalse(verdicts.deep_flush(self.flushed(nvml_used_drop=0)).passed)



class TorchSnapshotTest(unittest.TestCase):
    SNAPSHOT = {
        "segments": [
            {"total_size": 20 * MIB, "blocks": [
                {"size": 8 * MIB, "requested_size": 8 * MIB - 512, "state": "active_allocated"},
                {"size": 4 * MIB, "requested_size": 4 * MIB, "state": "active_pending_free"},
                {"size": 8 * MIB, "requested_size": 0, "state": "inactive"}]},
            {"total_size": 2 * MIB, "blocks": [
                {"size": 2 * MIB, "requested_size": MIB, "state": "active_allocated"}]},
        ],
        "device_traces": [[{"action": "alloc"}, {"action": "free_requested"}], [{"action": "alloc"}]],
    }

    def recorded(self, **overrides):
        values = {"bytes": 3 * MIB, "totals": verdicts.snapshot_totals(self.SNAPSHOT)}
        values.update(overrides)
        return values

    def imported(self, **overrides):
        values = {"in_use": 9 * MIB - 512, "reserved": 22 * MIB}
        values.update(overrides)
        return values

    VIEWER = [("stats", ""), ("trace", "")]

    def test_totals_count_requested_bytes_of_active_blocks(self):
        self.assertEqual(verdicts.snapshot_totals(self.SNAPSHOT),
                         {"in_use": 9 * MIB - 512, "reserved": 22 * MIB, "events": 3})

    def test_equal_import_and_a_reading_viewer_pass(self):
        verdict = verdicts.torch_snapshot(self.recorded(), self.imported(), self.VIEWER)
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("3 events", verdict.text)
        self.assertIn("stats, trace read the export", verdict.text)

    def test_recording_failure_fails(self):
        verdict = verdicts.torch_snapshot({"why": "exit 1: no GPU"}, {"why": "not run"}, self.VIEWER)
        self.assertFalse(verdict.passed)
        self.assertIn("no GPU", verdict.text)

    def test_a_snapshot_too_large_to_commit_fails(self):
        self.assertFalse(verdicts.torch_snapshot(self.recorded(bytes=9 * MIB), self.imported(), self.VIEWER).passed)

    def test_different_import_totals_fail(self):
        verdict = verdicts.torch_snapshot(self.recorded(), self.imported(in_use=9 * MIB), self.VIEWER)
        self.assertFalse(verdict.passed)
        self.assertIn("the imported report holds", verdict.text)

    def test_a_viewer_refusal_fails(self):
        verdict = verdicts.torch_snapshot(self.recorded(), self.imported(),
                                          [("stats", ""), ("trace", "exit 1: KeyError: 'frames'")])
        self.assertFalse(verdict.passed)
        self.assertIn("KeyError", verdict.text)


class KerasFitTest(unittest.TestCase):
    """Keras on JAX: correct predictions, sites naming the script, and a flush the device's memory shows."""

    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads", "keras_fit.py")

    def keras_report(self, files):
        """One 4 MiB site per file, each with one Python frame at the script's fit line."""
        line = verdicts.marked_lines(self.SCRIPT)["fit"]
        frames, stacks, sites = [], [], []
        for index, file in enumerate(files):
            frames.append({"id": index, "python": True, "file": file, "line": line, "function": "main"})
            stacks.append({"id": index, "frames": [index]})
            sites.append({"stack": index, "kind": "device", "total_count": 1, "total_bytes": 4 * MIB})
        return report(sites=sites, frames=frames, stacks=stacks)

    def fitted(self, correct=True, **flush):
        values = {"ok": True, "released_bytes": 40 * MIB, "nvml_used_drop": 38 * MIB, "cli_output": ""}
        values.update(flush)
        return {"event": "result", "framework": "keras", "version": "3.15.1", "jax": "0.8.1", "device": "H200",
                "correct": correct, "error": "" if correct else "predictions differ by 0.5",
                "losses": [0.69, 0.41, 0.30], "flush": values}

    def test_named_and_flushed_passes(self):
        verdict = verdicts.keras_fit(self.fitted(), self.keras_report(["/s/keras_fit.py", "/s/other.py"]), self.SCRIPT)
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("1 sites (4 MiB) name keras_fit.py (lines fit)", verdict.text)
        self.assertIn("released 40 MiB, device used -38 MiB", verdict.text)

    def test_wrong_predictions_fail(self):
        verdict = verdicts.keras_fit(self.fitted(correct=False), self.keras_report(["/s/keras_fit.py"]), self.SCRIPT)
        self.assertFalse(verdict.passed)
        self.assertIn("predictions differ", verdict.text)

    def test_no_site_naming_the_script_fails(self):
        verdict = verdicts.keras_fit(self.fitted(), self.keras_report(["/s/other.py"]), self.SCRIPT)
        self.assertFalse(verdict.passed)
        self.assertIn("no allocation names the script", verdict.text)

    def test_flush_that_released_nothing_or_left_the_device_full_fails(self):
        named = self.keras_report(["/s/keras_fit.py"])
        self.assertFalse(verdicts.keras_fit(self.fitted(released_bytes=0, nvml_used_drop=0), named, self.SCRIPT).passed)
        self.assertFalse(verdicts.keras_fit(self.fitted(nvml_used_drop=2 * MIB), named, self.SCRIPT).passed)
        self.assertFalse(verdicts.keras_fit(self.fitted(nvml_used_drop=None), named, self.SCRIPT).passed)

    def test_flush_refused_fails(self):
        verdict = verdicts.keras_fit(self.fitted(ok=False, released_bytes=None, cli_output="no vramshim process 42"),
                                     self.keras_report(["/s/keras_fit.py"]), self.SCRIPT)
        self.assertFalse(verdict.passed)
        self.assertIn("no vramshim process 42", verdict.text)


class LibraryBuffersTest(unittest.TestCase):
    """NCCL's and cuBLAS's own buffers are attributed to their modules, and the CLI's view agrees."""

    RESULT = {"event": "result", "torch": "2.9.1", "nccl": "2.27.5", "correct": True, "error": ""}

    def library_report(self, sites_by_module):
        """One site per (module path, bytes): a frame in that module above a frame in libtorch_cuda."""
        paths = sorted({path for path, _ in sites_by_module} | {"/sp/torch/lib/libtorch_cuda.so"})
        modules = [{"id": index, "path": path, "base": 0, "build_id": ""} for index, path in enumerate(paths)]
        frames, stacks, sites = [], [], []
        for index, (path, size) in enumerate(sites_by_module):
            frames.append({"id": 2 * index, "module": paths.index(path), "offset": 64, "function": None})
            frames.append({"id": 2 * index + 1, "module": paths.index("/sp/torch/lib/libtorch_cuda.so"),
                           "offset": 128, "function": "_ZN2at4cuda20getCurrentCUDABlasHandleEv"})
            stacks.append({"id": index, "frames": [2 * index, 2 * index + 1]})
            sites.append({"stack": index, "kind": "device", "total_count": 1, "total_bytes": size})
        document = report(sites=sites, frames=frames, stacks=stacks)
        document["modules"] = modules
        return document

    NCCL = "/sp/nvidia/nccl/lib/libnccl.so.2"
    CUBLAS_LT = "/sp/nvidia/cublas/lib/libcublasLt.so.12"

    def test_both_libraries_attributed_and_shown_pass(self):
        document = self.library_report([(self.NCCL, 6 * MIB), (self.NCCL, 2 * MIB), (self.CUBLAS_LT, 4 * MIB)])
        verdict = verdicts.library_buffers(self.RESULT, document, {"libnccl": 8 * MIB, "libcublas": 4 * MIB})
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("libnccl: 2 sites, 8.0 MiB; libcublas: 1 sites, 4.0 MiB", verdict.text)

    def test_a_library_without_sites_fails(self):
        document = self.library_report([(self.NCCL, 6 * MIB), ("/sp/torch/lib/libtorch_cuda.so", 4 * MIB)])
        verdict = verdicts.library_buffers(self.RESULT, document, {"libnccl": 6 * MIB, "libcublas": 0})
        self.assertFalse(verdict.passed)
        self.assertIn("no site has a libcublas frame", verdict.text)

    def test_a_cli_view_that_disagrees_or_fails_fails(self):
        document = self.library_report([(self.NCCL, 6 * MIB), (self.CUBLAS_LT, 4 * MIB)])
        self.assertFalse(verdicts.library_buffers(self.RESULT, document, {"libnccl": 6 * MIB, "libcublas": MIB}).passed)
        verdict = verdicts.library_buffers(self.RESULT, document, {"libnccl": 6 * MIB, "libcublas": "exit 2: bad"})
        self.assertFalse(verdict.passed)
        self.assertIn("exit 2: bad", verdict.text)

    def test_a_wrong_answer_fails(self):
        document = self.library_report([(self.NCCL, 6 * MIB), (self.CUBLAS_LT, 4 * MIB)])
        wrong = dict(self.RESULT, correct=False, error="all_reduce differs from the host's")
        verdict = verdicts.library_buffers(wrong, document, {"libnccl": 6 * MIB, "libcublas": 4 * MIB})
        self.assertFalse(verdict.passed)
        self.assertIn("all_reduce differs", verdict.text)

    def test_report_view_bytes_sums_the_listed_sites(self):
        self.assertEqual(verdicts.report_view_bytes('{"sites": [{"total_bytes": 3}, {"total_bytes": 4}]}'), 7)
        self.assertIsNone(verdicts.report_view_bytes("vramshim: no such file"))


class BackwardLabelsTest(unittest.TestCase):
    @staticmethod
    def view(*functions):
        return json.dumps({"sites": [{"label": {"function": name, "kind": "native"}} for name in functions]})

    def test_sites_named_by_autograd_nodes_pass(self):
        verdict = verdicts.backward_labels(
            self.view(
                "forward",
                "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
                "at::_ops::sum_dim_IntList::call(at::Tensor const&)",
            )
        )
        self.assertTrue(verdict.passed, verdict.text)
        self.assertIn("1 autograd nodes name sites, 0 of 3 sites named by c10's allocator", verdict.text)

    def test_backward_sites_named_by_the_allocator_fail(self):
        verdict = verdicts.backward_labels(
            self.view("forward", "c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)")
        )
        self.assertFalse(verdict.passed)
        self.assertIn("no site is named by an autograd node", verdict.text)

    def test_no_view_fails(self):
        self.assertFalse(verdicts.backward_labels("vramshim: cannot read").passed)

if __name__ == "__main__":
    unittest.main()
