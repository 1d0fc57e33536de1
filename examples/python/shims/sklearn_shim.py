"""sklearn.utils.shuffle for the Fashion-MNIST benchmark script (sklearn is not installed):
the arrays permuted together by one random permutation, as sklearn does."""
import numpy as np

# False (fashion_convnet_benchmark.py --no-preshuffle): the arrays are returned in their
# own order, for a run compared step by step with the C++ port.
ENABLED = True


def shuffle(*arrays, random_state=None):
    if not ENABLED:
        return list(arrays) if len(arrays) > 1 else arrays[0]
    # sklearn's check_random_state: None is numpy's global RandomState (np.random.seed
    # fixes it), an int seeds a new one.
    if random_state is None:
        rng = np.random.mtrand._rand
    elif isinstance(random_state, np.random.RandomState):
        rng = random_state
    else:
        rng = np.random.RandomState(random_state)
    n = len(arrays[0])
    order = rng.permutation(n)
    out = [np.asarray(a)[order] for a in arrays]
    return out[0] if len(out) == 1 else out
