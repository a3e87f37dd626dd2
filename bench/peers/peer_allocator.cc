// The small C library through which bench/peers/python_alloc.py allocates under memray.
#include <cstdlib>

extern "C" {

__attribute__((visibility("default"))) void* peer_alloc(size_t bytes) { return std::malloc(bytes); }

__attribute__((visibility("default"))) void peer_free(void* pointer) { std::free(pointer); }
}
