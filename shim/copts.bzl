"""Compiler options shared by every library that is linked into the preloaded shim."""

# Hidden by default: only the hooks (marked explicitly) may be exported from libvramshim.so.
SHIM_COPTS = [
    "-fPIC",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    # Thread-locals are read on every hooked call. The shim is preloaded, so its few bytes of TLS are
    # in the initial block and a thread-local costs one %fs-relative load instead of a
    # __tls_get_addr call (a late dlopen still fits in glibc's static TLS surplus).
    "-ftls-model=initial-exec",
]
