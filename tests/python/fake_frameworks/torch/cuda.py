"""A test double of torch.cuda: records each empty_cache() call."""
initialized = True
empty_cache_calls = 0


def is_initialized():
    return initialized


def empty_cache():
    global empty_cache_calls
    empty_cache_calls += 1
