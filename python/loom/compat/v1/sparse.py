"""tf.SparseTensor, tf.SparseTensorValue and tf.sparse over Loom's sparse ops
(loom/ops/sparse.h): a SparseTensor is the triple indices int64 [N, rank], values [N],
dense_shape int64 [rank], as TF's; session.run of one returns a SparseTensorValue of
numpy arrays, and a sparse_placeholder is fed one. parse_example's VarLenFeature output
is a SparseTensor [batch, longest list] with TF's row-major [row, position] indices."""
import collections

import numpy as np

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes


class SparseTensorValue(collections.namedtuple("SparseTensorValue",
                                               ["indices", "values", "dense_shape"])):
    """tf.compat.v1.SparseTensorValue: what session.run returns for a SparseTensor."""


class SparseTensor:
    """tf.SparseTensor(indices, values, dense_shape)."""

    def __init__(self, indices, values, dense_shape):
        graph = next((t.graph for t in (indices, values, dense_shape)
                      if isinstance(t, _fw.Tensor)), None) or _fw.get_default_graph()
        with graph.as_default():
            self._indices = _fw.convert_to_tensor(indices, dtype=_int64_of(indices))
            self._values = _fw.convert_to_tensor(values)
            self._dense_shape = _fw.convert_to_tensor(dense_shape, dtype=_int64_of(dense_shape))
        for name, t in (("indices", self._indices), ("dense_shape", self._dense_shape)):
            if t.dtype != _dtypes.int64:
                raise TypeError("SparseTensor %s must be int64, got %s" % (name, t.dtype))

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(*sparse_tensor_value)

    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self):
        return self._values.graph

    @property
    def op(self):
        return self._values.op

    @property
    def shape(self):
        """The static dense shape: dense_shape's value when it is a constant, else its
        rank (from indices or dense_shape) with unknown dims."""
        if self._dense_shape.op.type == "Const":
            return _fw.TensorShape([int(d) for d in self._dense_shape.op.get_attr("value")])
        rank = self._dense_shape.shape.as_list()
        rank = rank[0] if rank else None
        if rank is None:
            dims = self._indices.shape.as_list()
            rank = dims[1] if dims is not None and len(dims) == 2 else None
        return _fw.TensorShape(None if rank is None else [None] * rank)

    def get_shape(self):
        return self.shape

    def eval(self, feed_dict=None, session=None):
        from loom.compat.v1._session import _session_for
        return _session_for(self.graph, session).run(self, feed_dict)

    def __repr__(self):
        return "SparseTensor(indices=%s, values=%s, dense_shape=%s)" % (
            self._indices, self._values, self._dense_shape)


def _int64_of(value):
    return None if isinstance(value, _fw.Tensor) else _dtypes.int64


def _as_sparse(sp_input, what):
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("%s: expected a SparseTensor, got %r" % (what, sp_input))
    return sp_input


def _apply(op_type, inputs, name):
    from loom.compat.v1 import _ops
    return _ops.apply_op(op_type, inputs, name=name or op_type)


def _default(dtype, default_value):
    if default_value is None:
        default_value = b"" if dtype == _dtypes.string else 0
    if isinstance(default_value, _fw.Tensor):
        return default_value
    return _fw.constant(np.asarray(default_value, dtype=dtype.as_numpy_dtype))


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """tf.sparse.to_dense: the dense tensor, default_value (0 / b"") where no index
    points. Indices may come in any order (TF requires them sorted when
    validate_indices); a repeated or out-of-range index fails at run time."""
    sp = _as_sparse(sp_input, "sparse.to_dense")
    with sp.graph.as_default():
        fill = _default(sp.dtype, default_value)
        return _apply("SparseToDense", [sp.indices, sp.values, sp.dense_shape, fill],
                      name or "SparseToDense")


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """tf.sparse_to_dense (TF1's argument order): sparse_indices [N, rank], [N] (rank 1)
    or a scalar; sparse_values [N] or a scalar for every index (numeric scalars only)."""
    from loom.compat.v1 import _ops
    ops = _ops.NAMESPACES[""]
    indices = _fw.convert_to_tensor(sparse_indices)
    graph = indices.graph
    with graph.as_default():
        if indices.dtype != _dtypes.int64:
            indices = ops["cast"](indices, _dtypes.int64)
        rank = indices.shape.as_list()
        if rank is not None and len(rank) < 2:
            indices = ops["reshape"](indices, [-1, 1])
        shape = _fw.convert_to_tensor(output_shape)
        if shape.dtype != _dtypes.int64:
            shape = ops["cast"](shape, _dtypes.int64)
        shape = ops["reshape"](shape, [-1])
        values = _fw.convert_to_tensor(sparse_values)
        if values.shape.as_list() == []:
            if values.dtype == _dtypes.string:
                raise NotImplementedError("sparse_to_dense: a scalar string sparse_values; "
                                          "give one value per index")
            values = _ops.zeros_like(indices[:, 0], dtype=values.dtype) + values
        return to_dense(SparseTensor(indices, values, shape),
                        ops["cast"](default_value, values.dtype)
                        if isinstance(default_value, _fw.Tensor) else default_value,
                        name=name or "SparseToDense")


def reorder(sp_input, name=None):
    """tf.sparse.reorder: the same SparseTensor with indices in row-major order."""
    sp = _as_sparse(sp_input, "sparse.reorder")
    with sp.graph.as_default():
        indices, values = _apply("SparseReorder", [sp.indices, sp.values, sp.dense_shape],
                                 name or "SparseReorder")
    return SparseTensor(indices, values, sp.dense_shape)


def reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None,
               output_is_sparse=False, name=None):
    """tf.sparse.reduce_sum: the dense sum over axis (all when None)."""
    if output_is_sparse:
        raise NotImplementedError("sparse.reduce_sum(output_is_sparse=True) is not supported")
    sp = _as_sparse(sp_input, "sparse.reduce_sum")
    axis = reduction_axes if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    from loom.compat.v1 import _ops
    with sp.graph.as_default():
        dense = to_dense(sp, 0)
        return _ops.NAMESPACES[""]["reduce_sum"](dense, axis=axis, keepdims=keep, name=name)


def placeholder(dtype, shape=None, name=None):
    """tf.sparse_placeholder(dtype, shape=None): fed a SparseTensorValue (or an
    (indices, values, dense_shape) tuple) through feed_dict."""
    rank = None
    if shape is not None:
        shape = _fw.TensorShape(shape).as_list()
        rank = None if shape is None else len(shape)
    name = name or "SparsePlaceholder"
    with _fw.name_scope(name):
        indices = _fw.placeholder(_dtypes.int64, [None, rank], name="indices")
        values = _fw.placeholder(dtype, [None], name="values")
        dense_shape = _fw.placeholder(_dtypes.int64, [rank], name="shape")
    return SparseTensor(indices, values, dense_shape)


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None):
    """tf.nn.embedding_lookup_sparse: per row of sp_ids, the combination (combiner
    'mean' by default, 'sum', 'sqrtn') of the params rows of its ids, weighted by
    sp_weights (None: weight 1). One output row per row of sp_ids.dense_shape[0] (TF1
    drops trailing rows without ids); the gradient into params is IndexedSlices."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("embedding_lookup_sparse: partitioned params (a list of "
                                      "%d) are not supported; pass one tensor" % len(params))
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup_sparse: max_norm is not supported")
    combiner = combiner or "mean"
    if combiner not in ("mean", "sum", "sqrtn"):
        raise ValueError("combiner must be one of 'mean', 'sqrtn' or 'sum'")
    ids = _as_sparse(sp_ids, "embedding_lookup_sparse sp_ids")
    weights = None if sp_weights is None else _as_sparse(sp_weights,
                                                         "embedding_lookup_sparse sp_weights")
    params = _fw.convert_to_tensor(params)
    graph = params.graph
    with graph.as_default(), graph.name_scope(name or "embedding_lookup_sparse"):
        parts = [ids.indices._out, ids.values._out, ids.dense_shape._out]
        w = None if weights is None else [weights.indices._out, weights.values._out,
                                          weights.dense_shape._out]
        return graph._tensor(_loom.embedding_lookup_sparse(
            graph._g, graph.get_name_scope(), params._out, parts, w, combiner))


def _batch_padded(sp):
    """The SparseTensor batch of a padded batch of sparse elements (Dataset.batch)."""
    with sp.graph.as_default():
        indices, values, dense_shape = _apply(
            "SparseBatchPadded", [sp.indices, sp.values, sp.dense_shape], "SparseBatchPadded")
    return SparseTensor(indices, values, dense_shape)


# A SparseTensor feature travels in the C++ Features map (names to dense tensors) as
# three entries (feature_column.h AddSparseFeature): "<key>/indices", "<key>/values",
# "<key>/dense_shape".
_FEATURE_PARTS = ("/indices", "/values", "/dense_shape")


def _feature_entries(key, sp):
    """{entry name: tensor} of SparseTensor (or SparseTensorValue) feature `key`."""
    return {key + part: t for part, t in zip(_FEATURE_PARTS, (sp.indices, sp.values,
                                                              sp.dense_shape))}


def _gather_features(features, join=True):
    """`features` ({name: Tensor}) with each complete triple of sparse entries joined
    into one SparseTensor under its key (join=False: the key maps to None)."""
    out = dict(features)
    for name in features:
        if not name.endswith(_FEATURE_PARTS[0]):
            continue
        key = name[:-len(_FEATURE_PARTS[0])]
        names = [key + part for part in _FEATURE_PARTS]
        if key in features or not all(n in out for n in names):
            continue
        parts = [out.pop(n) for n in names]
        out[key] = SparseTensor(*parts) if join else None
    return out
