// A shared object's function exported under a symbol version, as glibc exports
// __libc_start_main@@GLIBC_2.34: its .symtab name carries the version.
__asm__(".symver versioned_function_1, versioned_function@@VRAMSHIM_TEST_1");
int versioned_function_1(int n) { return n * 3 + 1; }
