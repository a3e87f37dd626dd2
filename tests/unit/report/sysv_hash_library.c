// A library with only the old ELF hash table (linked with --hash-style=sysv, no DT_GNU_HASH), as
// older toolchains and some vendors' binaries are: dynamic_symbols_test names its functions.
int sysv_function_one(int x) { return x * 3 + 1; }
int sysv_function_two(int x) { return sysv_function_one(x) * 5 + 2; }
static int sysv_local(int x) { return x ^ 0x55; }
int sysv_function_three(int x) { return sysv_local(sysv_function_two(x)); }
