"""tf.parse_example / tf.parse_single_example (tf.io.*) with tf.FixedLenFeature and
tf.VarLenFeature over the TfParseExample op (loom/estimator/tf_ops.cc, which runs io's
tf.Example parser): serialized tf.Example records [batch] in; per FixedLenFeature a dense
[batch] + shape tensor, per VarLenFeature a SparseTensor [batch, longest list] whose
indices are [row, position in the row] in row-major order (TF's layout; a record without
the feature, or with an empty list, has no entries). Other feature kinds
(FixedLenSequenceFeature, SparseFeature) are not supported."""
import collections

import numpy as np

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes
from loom.compat.v1 import sparse as _sparse


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """tf.io.FixedLenFeature(shape, dtype, default_value=None)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """tf.io.VarLenFeature(dtype): parsed into a SparseTensor."""


def _example_dtype(key, dtype):
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.float32, _dtypes.int64, _dtypes.string):
        raise ValueError("parse_example: feature '%s' has dtype %s; tf.Example holds "
                         "float32, int64 or string" % (key, dtype))
    return dtype


def parse_example(serialized, features, name=None, example_names=None):
    """tf.parse_example(serialized, features): a dict with, per FixedLenFeature key, a
    dense tensor [batch] + its shape, and per VarLenFeature key a SparseTensor. A record
    missing a FixedLenFeature without a default_value is an error naming the key (as
    TF's)."""
    serialized = _fw.convert_to_tensor(serialized)
    if serialized.dtype != _dtypes.string:
        raise TypeError("parse_example: serialized must be a string tensor, got %s"
                        % serialized.dtype)
    keys, dtypes, shapes, defaults = [], [], [], []
    sparse_keys, sparse_types = [], []
    graph = serialized.graph
    for key in sorted(features):
        feature = features[key]
        if isinstance(feature, VarLenFeature):
            sparse_keys.append(key)
            sparse_types.append(_example_dtype(key, feature.dtype))
            continue
        if not isinstance(feature, FixedLenFeature):
            raise NotImplementedError("parse_example: feature '%s' is a %s; only "
                                      "tf.FixedLenFeature and tf.VarLenFeature are supported"
                                      % (key, type(feature).__name__))
        dtype = _example_dtype(key, feature.dtype)
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
        with graph.as_default():
            defaults.append(_fw.constant(default, dtype=dtype))
    from loom.compat.v1 import _ops
    with graph.as_default(), graph.name_scope(name or "ParseExample"):
        outputs = _ops.apply_op("TfParseExample", [serialized] + defaults,
                                {"sparse_keys": sparse_keys,
                                 "sparse_types": [d._enum for d in sparse_types],
                                 "dense_keys": keys,
                                 "dense_types": [d._enum for d in dtypes],
                                 "dense_shapes": shapes},
                                name="ParseExample")
    if not isinstance(outputs, list):
        outputs = [outputs]
    n = len(sparse_keys)
    result = {key: _sparse.SparseTensor(outputs[i], outputs[n + i], outputs[2 * n + i])
              for i, key in enumerate(sparse_keys)}
    result.update(zip(keys, outputs[3 * n:]))
    return result


def parse_single_example(serialized, features, name=None, example_names=None):
    """tf.parse_single_example(serialized, features): one scalar record; dense features
    have their shape, VarLenFeatures are SparseTensors of rank 1 (indices [n, 1])."""
    serialized = _fw.convert_to_tensor(serialized)
    from loom.compat.v1 import _ops
    ops = _ops.NAMESPACES[""]
    graph = serialized.graph
    with graph.as_default(), graph.name_scope(name or "ParseSingleExample"):
        shape = serialized.shape.as_list()
        if shape is not None and shape != []:
            raise ValueError("parse_single_example: serialized must be a scalar string, got "
                             "shape %s" % serialized.shape)
        batch = ops["reshape"](serialized, [1])
        parsed = parse_example(batch, features)
        out = {}
        for key, value in parsed.items():
            if isinstance(value, _sparse.SparseTensor):
                out[key] = _sparse.SparseTensor(value.indices[:, 1:], value.values,
                                                value.dense_shape[1:])
            else:
                out[key] = ops["reshape"](value, value.shape.as_list()[1:])
    return out
