"""A test double of PyTorch for the deep flush: `torch.cuda` holds simulated-driver memory in a cache
that `torch.cuda.empty_cache()` frees, as PyTorch's caching allocator does."""
from . import cuda  # noqa: F401
