"""tf.parse_example (tf.io.parse_example) and tf.FixedLenFeature over the TfParseExample
op (loom/estimator/tf_ops.cc, which runs io's tf.Example parser): serialized
tf.Example records [batch] in, one dense [batch] + shape tensor per FixedLenFeature out.
VarLenFeature (sparse output) and the other feature kinds are not supported: Loom's
Python graph has no SparseTensor."""
import collections

import numpy as np

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """tf.io.FixedLenFeature(shape, dtype, default_value=None)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """tf.io.VarLenFeature(dtype): accepted by name; parse_example rejects it (no
    SparseTensor in Loom's Python graph)."""


def parse_example(serialized, features, name=None, example_names=None):
    """tf.parse_example(serialized, features): a dict of dense tensors, one per
    FixedLenFeature key, [batch] + its shape. A record missing a feature without a
    default_value is an error naming the key (as TF's)."""
    serialized = _fw.convert_to_tensor(serialized)
    if serialized.dtype != _dtypes.string:
        raise TypeError("parse_example: serialized must be a string tensor, got %s"
                        % serialized.dtype)
    keys, dtypes, shapes, defaults = [], [], [], []
    for key in sorted(features):
        feature = features[key]
        if not isinstance(feature, FixedLenFeature):
            raise NotImplementedError("parse_example: feature '%s' is a %s; only "
                                      "tf.FixedLenFeature is supported"
                                      % (key, type(feature).__name__))
        dtype = _dtypes.as_dtype(feature.dtype)
        if dtype not in (_dtypes.float32, _dtypes.int64, _dtypes.string):
            raise ValueError("parse_example: feature '%s' has dtype %s; tf.Example holds "
                             "float32, int64 or string" % (key, dtype))
        shape = _fw.TensorShape(feature.shape).as_list()
        if shape is None or any(d is None for d in shape):
            raise ValueError("parse_example: feature '%s' needs a fully defined shape, got %s"
                             % (key, feature.shape))
        keys.append(key)
        dtypes.append(dtype)
        shapes.append(shape)
        if feature.default_value is None:
            default = np.zeros([0], dtype=dtype.as_numpy_dtype)
        else:
            default = np.broadcast_to(np.asarray(feature.default_value,
                                                 dtype=dtype.as_numpy_dtype), shape)
        defaults.append(_fw.constant(default, dtype=dtype))
    from loom.compat.v1 import _ops
    graph = serialized.graph
    with graph.as_default(), graph.name_scope(name or "ParseExample"):
        outputs = _ops.apply_op("TfParseExample", [serialized] + defaults,
                                {"sparse_keys": [], "sparse_types": [], "dense_keys": keys,
                                 "dense_types": [d._enum for d in dtypes],
                                 "dense_shapes": shapes},
                                name="ParseExample")
    if not isinstance(outputs, list):
        outputs = [outputs]
    return dict(zip(keys, outputs))
