"""What a workload script needs from outside its own process: the device's used memory as NVML reports it
(the driver's own figure, which the shim does not see) and the vramshim CLI run on the script's own pid.
Both run without the shim: a program the script starts must not be measured as part of the job.
Imported by the workload scripts beside it (torch_train.py, keras_fit.py); not a check of its own.
"""

import os
import re
import subprocess

MIB = 1 << 20


def without_shim():
    """This process's environment less LD_PRELOAD, for the programs it starts (the CLI, nvidia-smi)."""
    return {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}


def nvml_used_bytes(framework_figure=None):
    """The device's used memory: `framework_figure()` where the framework asks NVML itself (PyTorch's
    torch.cuda.device_memory_used), else nvidia-smi's, else None."""
    if framework_figure is not None:
        try:
            return int(framework_figure())
        except Exception:
            pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            timeout=20,
            env=without_shim(),
        )
        return int(out.stdout.strip().splitlines()[0]) * MIB
    except Exception:
        return None


def drop(before, after):
    return None if before is None or after is None else before - after


def run_cli(cli, *args):
    """`vramshim ARGS… <this pid>`: (exit status, stdout and stderr together); -1 when it could not run."""
    try:
        out = subprocess.run(
            [cli, *args, str(os.getpid())], capture_output=True, text=True, timeout=60, env=without_shim()
        )
    except Exception as error:
        return -1, str(error)
    return out.returncode, out.stdout + out.stderr


def released_bytes(cli_output):
    """The bytes `vramshim flush` says it released for this pid (`PID: released 1.5 GiB (N bytes)`), or None."""
    match = re.search(rf"^{os.getpid()}: released .*\((\d+) bytes\)$", cli_output, re.MULTILINE)
    return int(match.group(1)) if match else None
