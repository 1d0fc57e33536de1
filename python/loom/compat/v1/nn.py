"""tf.nn: the nn ops under TF's names (generated from the registry, _ops._TABLE) and the
composites TF1 has (dropout, l2_normalize)."""
from loom.compat.v1 import _ops

globals().update(_ops.NAMESPACES["nn"])
dropout = _ops.dropout
l2_normalize = _ops.l2_normalize
moments = _ops.moments
