"""A test double of cupy whose default pool fails to free, to exercise a failing step."""


class _MemoryPool:
    def free_all_blocks(self):
        raise RuntimeError("simulated pool failure")


_pool = _MemoryPool()


def get_default_memory_pool():
    return _pool
