"""sklearn.utils.shuffle for the Fashion-MNIST benchmark script (sklearn is not installed):
the arrays permuted together by one random permutation, as sklearn does."""
import numpy as np


def shuffle(*arrays, random_state=None):
    rng = np.random.RandomState(random_state)
    n = len(arrays[0])
    order = rng.permutation(n)
    out = [np.asarray(a)[order] for a in arrays]
    return out[0] if len(out) == 1 else out
