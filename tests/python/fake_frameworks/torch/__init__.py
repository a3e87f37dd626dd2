"""A test double of torch: only what the deep flush touches (torch.cuda)."""
from . import cuda  # noqa: F401
