"""Libraries linked into the preloaded shim."""

load("@rules_cc//cc:defs.bzl", "cc_library")

# Hidden by default: only the hooks (marked explicitly) may be exported from libvramshim.so.
SHIM_COPTS = [
    "-fPIC",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
]

def shim_library(name, copts = [], **kwargs):
    """A cc_library compiled as every part of libvramshim.so must be; `copts` are added."""
    cc_library(
        name = name,
        copts = SHIM_COPTS + copts,
        **kwargs
    )
