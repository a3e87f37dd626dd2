"""Libraries linked into the preloaded shim."""

load("@rules_cc//cc:defs.bzl", "cc_library")

# Hidden by default: only the hooks (marked explicitly) may be exported from libvramshim.so.
# Thread-locals use the initial-exec model: one %fs-relative load instead of a __tls_get_addr call
# on every hook. The shim's thread-locals total under 100 bytes, well inside the static TLS surplus
# glibc keeps even for a library that is dlopen'ed rather than preloaded.
SHIM_COPTS = [
    "-fPIC",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    "-ftls-model=initial-exec",
]

def shim_library(name, copts = [], **kwargs):
    """A cc_library compiled as every part of libvramshim.so must be; `copts` are added."""
    cc_library(
        name = name,
        copts = SHIM_COPTS + copts,
        **kwargs
    )
