"""Loom: a C++ training framework in the shape of TensorFlow 1.x's Estimator stack.

Use it through TF1's names:

    import loom.compat.v1 as tf
"""
from loom import _loom  # noqa: F401  (the extension module: the C++ core)

__version__ = "0.1.0"
