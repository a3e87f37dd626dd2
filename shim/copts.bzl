"""Compiler options shared by every library that is linked into the preloaded shim."""

# Hidden by default: only the hooks (marked explicitly) may be exported from libvramshim.so.
SHIM_COPTS = [
    "-fPIC",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
]
