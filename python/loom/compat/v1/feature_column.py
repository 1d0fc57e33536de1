"""tf.feature_column over Loom's C++ feature columns (loom/estimator/feature_column.h):
the column constructors, input_layer and linear_model, and the columns the canned
estimators take. Categorical columns take dense features or SparseTensors (VarLenFeature),
as TF's. Hashing differs from TF's (Loom's own stable hash), so hashed ids are not TF's;
normalizer_fn, default_value and a non-float32 dtype of numeric_column are not supported
(docs/python.md)."""
from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes
from loom.compat.v1 import parsing as _parsing
from loom.compat.v1 import sparse as _sparse


class _Column:
    """A feature column: `key` for the simple ones, `name` as TF names it."""

    def __init__(self, native, key=None, parse_spec=None, **config):
        self._native_column = native
        self.key = key
        # What tf.feature_column.make_parse_example_spec gives for the column.
        self._parse_example_spec = parse_spec or {}
        self.__dict__.update(config)

    @property
    def name(self):
        return self._native_column.name

    def __repr__(self):
        return "<feature_column %s>" % self.name


def _native(column):
    if not isinstance(column, _Column):
        raise TypeError("expected a tf.feature_column column, got %r" % (column,))
    return column._native_column


def numeric_column(key, shape=(1,), default_value=None, dtype=_dtypes.float32,
                   normalizer_fn=None):
    if default_value is not None or normalizer_fn is not None:
        raise NotImplementedError("numeric_column: default_value and normalizer_fn are not "
                                  "supported")
    if _dtypes.as_dtype(dtype) not in (_dtypes.float32, _dtypes.float64):
        raise NotImplementedError("numeric_column: dtype must be float32 or float64")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    return _Column(_loom.numeric_column(key, list(shape)), key, shape=shape, dtype=dtype,
                   parse_spec={key: _parsing.FixedLenFeature(shape, _dtypes.as_dtype(dtype))})


def bucketized_column(source_column, boundaries):
    return _Column(_loom.bucketized_column(_native(source_column), [float(b) for b in boundaries]),
                   source_column=source_column, boundaries=tuple(boundaries),
                   parse_spec=source_column._parse_example_spec)


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    return _Column(_loom.categorical_column_with_vocabulary_list(
        key, list(vocabulary_list), int(default_value), int(num_oov_buckets)), key,
        vocabulary_list=tuple(vocabulary_list),
        parse_spec={key: _parsing.VarLenFeature(_vocabulary_dtype(vocabulary_list, dtype))})


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=_dtypes.string):
    return _Column(_loom.categorical_column_with_vocabulary_file(
        key, vocabulary_file, -1 if vocabulary_size is None else int(vocabulary_size),
        -1 if default_value is None else int(default_value), int(num_oov_buckets),
        _dtypes.as_dtype(dtype)._enum), key,
        parse_spec={key: _parsing.VarLenFeature(_example_int(dtype))})


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=_dtypes.string):
    return _Column(_loom.categorical_column_with_hash_bucket(
        key, int(hash_bucket_size), _dtypes.as_dtype(dtype)._enum), key,
        hash_bucket_size=hash_bucket_size,
        parse_spec={key: _parsing.VarLenFeature(_example_int(dtype))})


def categorical_column_with_identity(key, num_buckets, default_value=None):
    return _Column(_loom.categorical_column_with_identity(key, int(num_buckets), default_value),
                   key, num_buckets=num_buckets,
                   parse_spec={key: _parsing.VarLenFeature(_dtypes.int64)})


def indicator_column(categorical_column):
    return _Column(_loom.indicator_column(_native(categorical_column)),
                   categorical_column=categorical_column,
                   parse_spec=categorical_column._parse_example_spec)


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    if ckpt_to_load_from is not None or max_norm is not None:
        raise NotImplementedError("embedding_column: ckpt_to_load_from and max_norm are not "
                                  "supported (warm-start the Estimator instead)")
    from loom.compat.v1 import layers as _layers
    return _Column(_loom.embedding_column(_native(categorical_column), int(dimension), combiner,
                                          _layers._initializer(initializer, "embedding_column"),
                                          trainable),
                   categorical_column=categorical_column, dimension=dimension,
                   parse_spec=categorical_column._parse_example_spec)


def crossed_column(keys, hash_bucket_size, hash_key=None):
    if hash_key is not None:
        raise NotImplementedError("crossed_column: hash_key is not supported")
    native_keys = [k if isinstance(k, str) else _native(k) for k in keys]
    spec = {}
    for k in keys:  # a raw key is a string feature, as TF's
        spec.update({k: _parsing.VarLenFeature(_dtypes.string)} if isinstance(k, str)
                    else k._parse_example_spec)
    return _Column(_loom.crossed_column(native_keys, int(hash_bucket_size)),
                   keys=tuple(keys), hash_bucket_size=hash_bucket_size, parse_spec=spec)


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=_dtypes.float32):
    spec = dict(categorical_column._parse_example_spec)
    spec[weight_feature_key] = _parsing.VarLenFeature(_dtypes.as_dtype(dtype))
    return _Column(_loom.weighted_categorical_column(_native(categorical_column),
                                                     weight_feature_key),
                   categorical_column=categorical_column, parse_spec=spec)


def _vocabulary_dtype(vocabulary_list, dtype):
    if dtype is not None:
        return _example_int(dtype)
    if all(isinstance(v, (str, bytes)) for v in vocabulary_list):
        return _dtypes.string
    return _dtypes.int64


def _example_int(dtype):
    """A categorical column's dtype as tf.Example holds it (integers as int64)."""
    dtype = _dtypes.as_dtype(dtype)
    return _dtypes.int64 if dtype in (_dtypes.int32, _dtypes.int64) else dtype


def make_parse_example_spec(feature_columns):
    """tf.feature_column.make_parse_example_spec: the tf.parse_example features the
    columns read: a FixedLenFeature per numeric column, a VarLenFeature per categorical
    (and weight) key, as TF's."""
    spec = {}
    for column in feature_columns:
        _native(column)  # a TypeError for anything else
        for key, feature in column._parse_example_spec.items():
            if key in spec and spec[key] != feature:
                raise ValueError("feature_columns contain different parse_spec for key %s. "
                                 "Given %s and %s" % (key, feature, spec[key]))
            spec[key] = feature
    return spec


def _features(features):
    graph = None
    out = {}
    for k, v in features.items():
        if isinstance(v, _sparse.SparseTensor):  # three entries (feature_column.h)
            graph = graph or v.graph
            out.update({n: t._out for n, t in _sparse._feature_entries(str(k), v).items()})
            continue
        t = _fw.convert_to_tensor(v)
        graph = graph or t.graph
        out[str(k)] = t._out
    return graph or _fw.get_default_graph(), out


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """tf.feature_column.input_layer: the dense columns concatenated, [batch, width]."""
    graph, native = _features(features)
    with graph.as_default():
        return graph._tensor(_loom.input_layer(graph._g, graph.get_name_scope(), native,
                                               [_native(c) for c in feature_columns]))


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """tf.feature_column.linear_model: logits [batch, units]."""
    graph, native = _features(features)
    with graph.as_default():
        return graph._tensor(_loom.linear_model(graph._g, graph.get_name_scope(), native,
                                                [_native(c) for c in feature_columns],
                                                int(units), sparse_combiner))
