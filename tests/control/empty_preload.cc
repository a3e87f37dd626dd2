// Stands in for libvramshim.so in the tests of `vramshim run`, which only sets the environment and
// execs: a shared object with nothing in it that LD_PRELOAD can load anywhere.
