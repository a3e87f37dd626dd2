"""The real-GPU check: runs checks 1-13 and prints one PASS/FAIL line each.

Started by run.sh (which compiles the CUDA programs first); see run.sh for the command. Every check runs its
programs as subprocesses with a timeout, in its own process group, under one overall deadline, so a hung check
costs at most its timeout. verdicts.py decides each check from what the programs printed; this file only runs
them and collects their output. Results go to stdout and to a JSON file.
"""

import argparse
import glob
import json
import os
import pickle
import platform
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import verdicts
from clean_environment import clean_environment

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")
PAIRS = 10000
PAIR_BYTES = 1 << 20
# 10,000 driver pairs take about 1 s (77-95 us each) after a context start of a few seconds; a hung program
# must not take the budget of the framework checks that follow.
CUDA_PROGRAM_TIMEOUT = 30


@dataclass
class Outcome:
    returncode: int  # -9 when killed at its timeout
    stdout: str
    stderr: str
    timed_out: bool

    def events(self):
        """The JSON objects among stdout's lines (the workload scripts' events)."""
        return verdicts.json_events(self.stdout)

    def why(self):
        """A one-line account of a failed run: the timeout, the script's error event, or stderr's telling line."""
        if self.timed_out:
            return "timed out"
        error = verdicts.last_json_event(self.events(), "error")
        if error:
            return error.get("error", "error")
        line = verdicts.last_error_line(self.stderr)
        return f"exit {self.returncode}" + (f": {line[:160]}" if line else "")


class Runner:
    """Runs commands with a per-command timeout, never past the overall deadline."""

    def __init__(self, deadline, base_env):
        self.deadline = deadline
        self.base_env = base_env
        # The shim's lines saying its pools fence with context synchronizes (a stream source it cannot
        # see: a green context, an unhooked stream creator, a library dlopen'ed with RTLD_DEEPBIND), as
        # the frameworks' runs printed them: each costs every pool a synchronize per batch of frees.
        self.context_synchronize_lines = set()

    def remaining(self):
        return self.deadline - time.monotonic()

    def env(self, **extra):
        env = dict(self.base_env)
        env.update({key: str(value) for key, value in extra.items() if value is not None})
        return env

    def start(self, argv, env, stderr=subprocess.PIPE):
        # errors="replace": a stray non-UTF-8 byte in a program's output must not crash the check.
        return subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )

    def finish(self, process, timeout):
        try:
            stdout, stderr = process.communicate(timeout=max(1.0, min(timeout, self.remaining())))
            self.note_context_synchronizes(stdout, stderr)
            return Outcome(process.returncode, stdout, stderr, False)
        except subprocess.TimeoutExpired:
            kill_group(process)
            stdout, stderr = drain(process)
            return Outcome(-9, stdout, stderr, True)

    def run(self, argv, env, timeout=60):
        return self.finish(self.start(argv, env), timeout)

    def note_context_synchronizes(self, *outputs):
        for output in outputs:
            for line in (output or "").splitlines():
                if line.startswith("vramshim: ") and "fences freed memory with a context synchronize" in line:
                    self.context_synchronize_lines.add(line)


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def drain(process):
    """What a killed process group left in its pipes. Bounded: a descendant that left the group (setsid)
    would keep the pipes open, and waiting for their end would hang the check."""
    try:
        return process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.wait()
        return "", "(output lost: a process outside the killed group kept the pipes open)"


def read_report(path):
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError):
        return None


class GpuCheck:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.shim = args.shim
        self.cli = args.cli
        self.runner = Runner(time.monotonic() + args.budget, clean_environment(os.environ))
        self.results = []
        self.baseline = None
        self.baseline_why = "not run"
        self.versions = {}

    # ------------------------------------------------------------ plumbing

    def shim_env(self, report=None, **extra):
        """The environment of a process under the shim: preloaded, logging its hook counts at exit."""
        return self.runner.env(
            LD_PRELOAD=self.shim,
            VRAMSHIM_LOG="debug",
            VRAMSHIM_REPORT=report or "off",
            **extra,
        )

    def report_path(self, name):
        path = os.path.join(self.work, f"{name}.report.json")
        if os.path.exists(path):
            os.unlink(path)
        return path

    def record(self, name, verdict, started):
        line = f"{'PASS' if verdict.passed else 'FAIL'} {name} {verdict.text}"
        print(line, flush=True)
        self.results.append(
            {
                "name": name,
                "passed": verdict.passed,
                "text": verdict.text,
                "seconds": round(time.monotonic() - started, 2),
                "details": verdict.details,
            }
        )

    def check(self, name, function):
        started = time.monotonic()
        if self.runner.remaining() < 5:
            self.record(name, verdicts.failed("skipped: the overall time budget is spent"), started)
            return
        try:
            verdict = function()
        except Exception as error:  # a bug in a check must not cost the other checks
            verdict = verdicts.failed(f"check crashed: {type(error).__name__}: {error}")
        self.record(name, verdict, started)

    def python(self, script, *script_args):
        return [sys.executable, os.path.join(WORKLOADS, script), *script_args]

    def result_of(self, outcome):
        return verdicts.last_json_event(outcome.events(), "result") if outcome.returncode == 0 else None

    def note_version(self, result, *keys):
        for key in keys:
            if result and result.get(key):
                self.versions[key if key != "version" else result.get("framework", key)] = result[key]

    # ------------------------------------------------------------ checks 1 and 2

    def alloc_loop(self, program):
        binary = os.path.join(self.args.bin, program)
        if not os.access(binary, os.X_OK):
            return verdicts.failed(f"{program} was not built (see the nvcc lines above)")
        name = os.path.basename(program)
        argv = [binary, str(PAIRS), str(PAIR_BYTES)]
        without = self.runner.run(argv, self.runner.env(), timeout=CUDA_PROGRAM_TIMEOUT)
        report = self.report_path(name)
        with_shim = self.runner.run(argv, self.shim_env(report), timeout=CUDA_PROGRAM_TIMEOUT)
        # A program that fails on its own says nothing about the shim: that reason first.
        if without.returncode != 0:
            return verdicts.failed(f"without the shim: {without.why()}")
        if with_shim.returncode != 0:
            return verdicts.failed(f"under the shim: {with_shim.why()}")
        return verdicts.alloc_loop(
            verdicts.parse_alloc_loop(without.stdout),
            verdicts.parse_alloc_loop(with_shim.stdout),
            verdicts.parse_hook_calls(with_shim.stderr),
            read_report(report),
        )

    # ------------------------------------------------------------ PyTorch

    def run_baseline(self):
        """PyTorch's own allocator, no shim: the reference losses and step time of checks 3, 4, 5 and 8."""
        outcome = self.runner.run(self.python("torch_train.py", "--deterministic"), self.runner.env(), timeout=60)
        self.baseline = self.result_of(outcome)
        self.baseline_why = outcome.why()
        self.note_version(self.baseline, "torch", "cuda", "device")

    def need_baseline(self):
        if self.baseline is None:
            return verdicts.failed(f"the run without the shim failed: {self.baseline_why}")
        return None

    def torch_own_allocator(self):
        missing = self.need_baseline()
        if missing:
            return missing
        outcome = self.runner.run(
            self.python("torch_train.py", "--deterministic", "--after", "empty-cache-flush", "--cli", self.cli),
            self.shim_env(),
            timeout=60,
        )
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(f"under the shim: {outcome.why()}")
        return verdicts.torch_own_allocator(self.baseline, result)

    def torch_no_caching(self):
        missing = self.need_baseline()
        if missing:
            return missing
        report = self.report_path("torch_no_caching")
        # The headline use: vramshim run with PyTorch's caching off.
        argv = [self.cli, "run", "--report", report, "--", *self.python("torch_train.py", "--deterministic")]
        env = self.runner.env(PYTORCH_NO_CUDA_MEMORY_CACHING=1, VRAMSHIM_LIB=self.shim)
        outcome = self.runner.run(argv, env, timeout=75)
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(f"vramshim run: {outcome.why()}")
        return verdicts.torch_no_caching(self.baseline, result, read_report(report))

    def torch_alloc_conf(self, conf, name, after):
        missing = self.need_baseline()
        if missing:
            return missing
        report = self.report_path(name)
        argv = self.python("torch_train.py", "--deterministic", "--after", after, "--cli", self.cli)
        outcome = self.runner.run(argv, self.shim_env(report, PYTORCH_CUDA_ALLOC_CONF=conf), timeout=60)
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(f"under the shim: {outcome.why()}")
        judge = verdicts.torch_async if after == "async-flush" else verdicts.torch_expandable
        return judge(self.baseline, result, read_report(report))

    def torch_limit(self, conf=None):
        """Check 7: the cap holds for PyTorch's default allocator, and for the device memory the driver serves
        itself under its other allocators (`conf`: PYTORCH_CUDA_ALLOC_CONF)."""
        extra = {"PYTORCH_CUDA_ALLOC_CONF": conf} if conf else {}
        env = self.shim_env(VRAMSHIM_LIMIT="2GiB", **extra)
        outcome = self.runner.run(self.python("torch_limit.py"), env, timeout=60)
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(outcome.why())
        return verdicts.torch_limit(result, outcome.stderr)

    def flush_midrun(self):
        """Check 8: signals and a CLI flush land while the training loop runs (caching off, the pool serving
        every tensor); the process is held before its last step until both have been answered."""
        missing = self.need_baseline()
        if missing:
            return missing
        report = self.report_path("flush_midrun")
        go = os.path.join(self.work, "flush_midrun.go")
        if os.path.exists(go):
            os.unlink(go)
        argv = self.python("torch_train.py", "--deterministic", "--wait-file", go, "--ready-step", "10")
        env = self.shim_env(report, PYTORCH_NO_CUDA_MEMORY_CACHING=1)
        # stderr joins stdout, so one pipe is read line by line; the watchdog ends a run that hangs.
        process = self.runner.start(argv, env, stderr=subprocess.STDOUT)
        watchdog = threading.Timer(max(1.0, min(75, self.runner.remaining())), kill_group, [process])
        watchdog.start()
        signal_sent, released, cli_error, lines = False, None, "", []
        for line in process.stdout:
            lines.append(line)
            if '"ready"' in line and not signal_sent:
                os.kill(process.pid, signal.SIGUSR1)
                signal_sent = True
                cli = self.runner.run([self.cli, "flush", str(process.pid)], self.runner.env(), timeout=60)
                released = verdicts.parse_flush_output(cli.stdout).get(process.pid)
                cli_error = cli.why()
                open(go, "w").close()
        process.wait()
        watchdog.cancel()
        outcome = Outcome(process.returncode, "".join(lines), "".join(lines), process.returncode == -signal.SIGKILL)
        result = self.result_of(outcome)
        if not signal_sent:
            return verdicts.failed(f"the run ended before step 10: {outcome.why()}")
        if result is None:
            return verdicts.failed(f"after the flush: {outcome.why()}")
        return verdicts.flush_midrun(self.baseline, result, signal_sent, released, read_report(report), cli_error)

    def python_lines(self):
        """The report of check 4 (caching off) names the training script's own lines."""
        report = read_report(os.path.join(self.work, "torch_no_caching.report.json"))
        if report is None:
            return verdicts.failed("no report from c4_torch_no_caching")
        return verdicts.python_lines(report, os.path.join(WORKLOADS, "torch_train.py"))

    def backward_labels(self):
        """The report of check 4 (caching off) names the backward pass's sites by their autograd nodes."""
        report = os.path.join(self.work, "torch_no_caching.report.json")
        if read_report(report) is None:
            return verdicts.failed("no report from c4_torch_no_caching")
        argv = [self.cli, "report", report, "--top", "0", "--format", "json"]
        view = self.runner.run(argv, self.runner.env(), timeout=60)
        if view.returncode != 0:
            return verdicts.failed(f"vramshim report: {view.why()}")
        return verdicts.backward_labels(view.stdout)

    def deep_flush(self):
        argv = self.python("torch_train.py", "--steps", "5", "--after", "deep-flush", "--cli", self.cli)
        outcome = self.runner.run(argv, self.shim_env(), timeout=60)
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(f"under the shim: {outcome.why()}")
        return verdicts.deep_flush(result)

    def torch_snapshot(self):
        """Check 11: a memory snapshot recorded with PyTorch's own allocator (left in the work folder, under
        $OUT, to be committed as bench/traces/ test data) read by `vramshim import torch-snapshot` with the
        same totals; check 4's report exported as a snapshot and read by PyTorch's own viewer."""
        snapshot = os.path.join(self.work, "training_snapshot.pickle")
        argv = self.python("torch_train.py", "--steps", "3", "--record-snapshot", snapshot)
        outcome = self.runner.run(argv, self.runner.env(), timeout=60)
        if self.result_of(outcome) is None or not os.path.exists(snapshot):
            recorded = {"why": outcome.why()}
        else:
            with open(snapshot, "rb") as file:
                totals = verdicts.snapshot_totals(pickle.load(file))
            recorded = {"bytes": os.path.getsize(snapshot), "totals": totals}
        imported = {"why": "not run"}
        if not recorded.get("why"):
            imported_path = os.path.join(self.work, "training_snapshot.report.json")
            run = self.runner.run(
                [self.cli, "import", "torch-snapshot", snapshot, "-o", imported_path], self.runner.env(), timeout=60
            )
            report = read_report(imported_path) if run.returncode == 0 else None
            if report is None:
                imported = {"why": run.why()}
            else:
                devices = report.get("devices") or []
                imported = {
                    "in_use": sum(device.get("in_use_bytes") or 0 for device in devices),
                    "reserved": sum(device.get("reserved_bytes") or 0 for device in devices),
                }
        exported = os.path.join(self.work, "torch_no_caching.pickle")
        source = os.path.join(self.work, "torch_no_caching.report.json")
        run = self.runner.run(
            [self.cli, "export", source, "--format", "torch-snapshot", "-o", exported], self.runner.env(), timeout=60
        )
        viewer = [("export", run.why())] if run.returncode != 0 else []
        for command in ("stats", "trace") if not viewer else ():
            viz = self.runner.run(
                [sys.executable, "-m", "torch.cuda._memory_viz", command, exported], self.runner.env(), timeout=60
            )
            viewer.append((command, "" if viz.returncode == 0 and viz.stdout.strip() else viz.why()))
        return verdicts.torch_snapshot(recorded, imported, viewer)

    # ------------------------------------------------------------ JAX and CuPy

    def framework(self, script, name, expected_kinds, **env):
        report = self.report_path(name)
        outcome = self.runner.run(self.python(script), self.shim_env(report, **env), timeout=60)
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(outcome.why())
        self.note_version(result, "version")
        return verdicts.framework_attributed(result, read_report(report), expected_kinds)

    # ------------------------------------------------------------ Keras (on JAX) and the libraries' own buffers

    def keras_python(self):
        """The Python of a venv that sees this interpreter's packages (JAX) and has Keras installed from the
        staged wheels (the GPU machine has no network); (path, None) or (None, why)."""
        if not glob.glob(os.path.join(self.args.wheels, "keras-*.whl")):
            return None, f"no Keras wheel in {self.args.wheels} (tools/stage-gpu.sh downloads them)"
        venv = tempfile.mkdtemp(prefix="gpu-check-keras.")  # out of the work folder, which comes back
        python = os.path.join(venv, "bin", "python")
        # --without-pip: ensurepip is often not installed; this interpreter's pip installs into the venv.
        made = self.runner.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv],
                               self.runner.env(), timeout=30)
        if made.returncode != 0:
            return None, f"python -m venv: {made.why()}"
        # --system-site-packages reaches the base interpreter's packages only; when this interpreter is
        # itself a venv, its own site-packages (JAX, pip) come in through a .pth file.
        venv_site = self.runner.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                                    self.runner.env(), timeout=30)
        if venv_site.returncode != 0:
            return None, f"the venv's Python: {venv_site.why()}"
        with open(os.path.join(venv_site.stdout.strip(), "outer_environment.pth"), "w") as file:
            file.write("\n".join(site.getsitepackages() + [site.getusersitepackages()]) + "\n")
        pip = self.runner.run(
            [python, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", self.args.wheels, "keras>=3"],
            self.runner.env(),
            timeout=90,
        )
        if pip.returncode != 0:
            return None, f"pip install keras: {pip.why()}"
        return python, None

    def keras_fit(self):
        python, why = self.keras_python()
        if python is None:
            return verdicts.failed(why)
        report = self.report_path("keras_fit")
        script = os.path.join(WORKLOADS, "keras_fit.py")
        env = self.shim_env(report, KERAS_BACKEND="jax", XLA_PYTHON_CLIENT_ALLOCATOR="platform")
        outcome = self.runner.run([python, script, "--cli", self.cli], env, timeout=90)
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(f"under the shim: {outcome.why()}")
        self.note_version(result, "version")
        return verdicts.keras_fit(result, read_report(report), script)

    def torch_libraries(self):
        report = self.report_path("torch_libraries")
        env = self.shim_env(report, PYTORCH_NO_CUDA_MEMORY_CACHING=1)
        outcome = self.runner.run(self.python("torch_libraries.py"), env, timeout=60)
        result = self.result_of(outcome)
        if result is None:
            return verdicts.failed(f"under the shim: {outcome.why()}")
        self.note_version(result, "nccl")
        shown = {}
        for library in verdicts.LIBRARIES:
            view = self.runner.run(
                [self.cli, "report", report, "--module", library, "--allocations", "--top", "0", "--format", "json"],
                self.runner.env(),
                timeout=30,
            )
            size = verdicts.report_view_bytes(view.stdout) if view.returncode == 0 else None
            shown[library] = size if size is not None else view.why()
        return verdicts.library_buffers(result, read_report(report), shown)

    # ------------------------------------------------------------ all

    def run_all(self):
        self.check("c1_nvcc_static_cudart", lambda: self.alloc_loop("alloc_loop_static"))
        self.check("c2_nvcc_shared_cudart", lambda: self.alloc_loop("alloc_loop_shared"))
        self.check("c2_nvcc_driver_api", lambda: self.alloc_loop("driver_alloc_loop"))
        self.run_baseline()
        self.check("c3_torch_own_allocator", self.torch_own_allocator)
        self.check("c4_torch_no_caching", self.torch_no_caching)
        self.check(
            "c5_torch_cudaMallocAsync",
            lambda: self.torch_alloc_conf("backend:cudaMallocAsync", "torch_async", "async-flush"),
        )
        self.check(
            "c5_torch_expandable_segments",
            lambda: self.torch_alloc_conf("expandable_segments:True", "torch_expandable", "none"),
        )
        self.check("c6_jax_default", lambda: self.framework("jax_check.py", "jax_default", ["vmm", "device"]))
        self.check(
            "c6_jax_platform",
            lambda: self.framework(
                "jax_check.py", "jax_platform", ["vmm", "device"], XLA_PYTHON_CLIENT_ALLOCATOR="platform"
            ),
        )
        self.check("c6_cupy", lambda: self.framework("cupy_check.py", "cupy", ["device"]))
        self.check("c7_limit_2GiB", self.torch_limit)
        self.check("c7_limit_2GiB_expandable", lambda: self.torch_limit("expandable_segments:True"))
        self.check("c7_limit_2GiB_async", lambda: self.torch_limit("backend:cudaMallocAsync"))
        self.check("c8_flush_midrun", self.flush_midrun)
        self.check("c9_python_lines", self.python_lines)
        self.check("c9_backward_labels", self.backward_labels)
        self.check("c10_deep_flush", self.deep_flush)
        self.check("c11_torch_snapshot", self.torch_snapshot)
        self.check("c12_keras_jax", self.keras_fit)
        self.check("c13_library_buffers", self.torch_libraries)

    def summary(self):
        passed = sum(1 for result in self.results if result["passed"])
        return passed, len(self.results) - passed


def machine_facts():
    facts = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(), "python": platform.python_version()}
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader", "-i", "0"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            facts["gpu"] = out.stdout.strip()
        except Exception:
            pass
    return facts


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shim", required=True, help="libvramshim.so")
    parser.add_argument("--cli", required=True, help="the vramshim command")
    parser.add_argument("--bin", required=True, help="folder of the compiled CUDA programs")
    parser.add_argument("--work", required=True, help="folder for reports and scratch files")
    parser.add_argument("--json", required=True, help="where to write the results")
    parser.add_argument("--wheels", required=True, help="folder of the staged wheels (Keras and its dependencies)")
    parser.add_argument("--budget", type=float, default=240, help="seconds for all checks together")
    parser.add_argument("--nvcc-version", default="")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    gpu = GpuCheck(args)
    gpu.run_all()
    passed, failed = gpu.summary()
    for line in sorted(gpu.runner.context_synchronize_lines):
        print(f"context synchronizes: {line}", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    document = {
        "machine": machine_facts(),
        "versions": dict(gpu.versions, nvcc=args.nvcc_version),
        "checks": gpu.results,
        "passed": passed,
        "failed": failed,
        "context_synchronize_lines": sorted(gpu.runner.context_synchronize_lines),
    }
    with open(args.json, "w") as file:
        json.dump(document, file, indent=1, default=str)
    print(f"results: {args.json}", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
