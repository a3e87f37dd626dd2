"""python -m vramshim ARGS...: the bundled vramshim CLI, as the `vramshim` command."""

from vramshim._native import main

main()
