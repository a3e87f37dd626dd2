"""Tests of clean_environment.py. Run: `bash tests/gpu/run.sh --self-test`."""

import unittest

from clean_environment import clean_environment


class CleanEnvironmentTest(unittest.TestCase):
    def test_per_run_settings_are_dropped(self):
        env = clean_environment(
            {
                "PATH": "/usr/bin",
                "LD_PRELOAD": "/x/libvramshim.so",
                "VRAMSHIM_LIMIT": "1G",
                "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                "PYTORCH_NO_CUDA_MEMORY_CACHING": "1",
                "CUBLAS_WORKSPACE_CONFIG": ":16:8",
                "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                "DEBUGINFOD_URLS": "https://debuginfod.example",
                "XDG_RUNTIME_DIR": "/nonexistent/run/user/0",
                "LD_LIBRARY_PATH": "/opt/lib",
            }
        )
        # What the shim and the CLI handle themselves stays, so the check sees what a user's job would.
        self.assertEqual(
            env,
            {
                "PATH": "/usr/bin",
                "DEBUGINFOD_URLS": "https://debuginfod.example",
                "XDG_RUNTIME_DIR": "/nonexistent/run/user/0",
                "LD_LIBRARY_PATH": "/opt/lib",
            },
        )

    def test_the_callers_mapping_is_not_changed(self):
        caller = {"LD_PRELOAD": "/x/libvramshim.so"}
        clean_environment(caller)
        self.assertEqual(caller, {"LD_PRELOAD": "/x/libvramshim.so"})


if __name__ == "__main__":
    unittest.main()
