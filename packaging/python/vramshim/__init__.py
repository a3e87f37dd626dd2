"""vramshim from Python: the calls a program running under the shim makes on itself.

Start the program under the shim (``vramshim run python train.py``, or a kernel installed with
``vramshim jupyter install``), then::

    import vramshim
    vramshim.stats()                   # the shim's figures, per device
    vramshim.flush(deep=True)          # empty torch's and CuPy's caches, then the shim's pool
    vramshim.snapshot("now.json")      # write the allocation report now

Each call asks the shim of this very process through its control socket. Outside the shim they
raise NotUnderShim, which says why; a request the shim refuses raises ShimError.
The ``vramshim`` command of this package is the CLI (``vramshim --help``); ``python -m vramshim``
runs it too.
"""

from vramshim._control import NotUnderShim, ShimError, flush, snapshot, stats
from vramshim._version import __version__

__all__ = ["NotUnderShim", "ShimError", "flush", "snapshot", "stats", "__version__"]
