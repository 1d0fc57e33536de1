"""TF 1.15's selection functions over Loom's ops: tf.nn.top_k / tf.math.top_k (the TopKV2
op), tf.unique, tf.reverse_sequence (a gather_nd), tf.sort / tf.argsort (top_k of the whole axis, as TF's sort_ops), tf.sequence_mask,
tf.boolean_mask, the one-argument tf.where (the Where op: the coordinates of the true
elements) and tf.gather_nd's batch_dims. docs/python_core.md lists them."""
import collections

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops
from loom.compat.v1 import dtypes as _dtypes

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])
UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])


def _ns():
    return _ops.NAMESPACES[""]


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 (TF's parameter names)
    """tf.nn.top_k: the k largest entries of each row of the last dimension, largest first,
    equal values in index order; (values, int32 indices) as a namedtuple. k is a Python int
    or an int32 scalar tensor (a placeholder, as TF's TopKV2)."""
    x = _fw.convert_to_tensor(input)
    if isinstance(k, _fw.Tensor):
        if k.dtype not in (_dtypes.int32, _dtypes.int64):
            raise TypeError("tf.nn.top_k: k must be int32, got %s (%s)" % (k.dtype.name, k.name))
        kk = k
    else:
        kk = _fw.constant(int(k), dtype=_dtypes.int32)
    values, indices = _ops.apply_op("TopKV2", [x, kk], {"sorted": bool(sorted)},
                                    name or "TopKV2")
    return TopKV2(values, indices)


def _sort_or_argsort(values, axis, direction, argsort, name):
    """TF 1.15's sort_ops: DESCENDING is top_k over the whole axis (moved last by a
    transpose when it is not), ASCENDING the same of -values (of -1 - values for
    integers, so INT_MIN sorts first; equal values keep their order either way)."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError("%s should be one of ASCENDING, DESCENDING" % direction)
    if isinstance(axis, _fw.Tensor):
        axis = _ops.constant_value(axis)
    if axis is None or getattr(axis, "ndim", 0) != 0:
        raise ValueError("axis must be a constant scalar")
    axis = int(axis)
    ns = _ns()
    with _fw.get_default_graph().name_scope(name or ("argsort" if argsort else "sort")):
        values = _fw.convert_to_tensor(values, name="values")
        rank = values.shape.ndims
        if rank is None:
            raise ValueError("tf.sort: the rank of %s must be known" % values.name)
        if not -rank <= axis < rank:
            raise ValueError("axis %d is out of range for values of rank %d" % (axis, rank))
        axis %= rank
        perm = None
        if values.dtype.is_integer:
            # An order-reversing map without overflow: -1 - v (~v; 255 - v for uint8).
            # Negation, TF 1.15's, maps INT_MIN to itself, which then sorted last.
            all_ones = 255 if values.dtype == _dtypes.uint8 else -1
            flip = lambda v: ns["subtract"](_fw.constant(all_ones, dtype=v.dtype), v)  # noqa: E731
        else:
            flip = ns["negative"]
        x = flip(values) if direction == "ASCENDING" else values
        if axis != rank - 1:
            perm = list(range(rank))
            perm[axis], perm[-1] = perm[-1], perm[axis]
            x = ns["transpose"](x, perm)
        n = x.shape.as_list()[-1]
        k = n if n is not None else ns["shape"](x)[-1]
        top = top_k(x, k)
        out = top.indices if argsort else top.values
        if perm is not None:
            out = ns["transpose"](out, perm)
        if direction == "ASCENDING" and not argsort:
            out = flip(out)
        return out


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """tf.sort: values sorted along `axis` (a constant)."""
    return _sort_or_argsort(values, axis, direction, False, name)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """tf.argsort: the int32 positions that sort values along `axis`; equal values keep
    their order (stable, whatever `stable` says, as top_k's ties)."""
    return _sort_or_argsort(values, axis, direction, True, name)


def unique(x, out_idx=_dtypes.int32, name=None):
    """tf.unique: (y, idx) with y the distinct values of the vector x in the order they
    first appear and x = y[idx] (the op Unique)."""
    y, idx = _ops.apply_op("Unique", [x], {"out_idx": _dtypes.as_dtype(out_idx)},
                           name or "Unique")
    return UniqueOutput(y, idx)


UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    """tf.unique_with_counts: unique's (y, idx) and how many elements have each value
    (a segment sum of ones over idx), in out_idx's dtype."""
    ns = _ns()
    with _fw.get_default_graph().name_scope(name or "UniqueWithCounts"):
        y, idx = unique(x, out_idx)
        ones = _ops.ones_like(idx)
        count = ns["unsorted_segment_sum"](ones, idx, ns["size"](y))
        return UniqueWithCounts(y, idx, ns["cast"](count, idx.dtype))


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """tf.reverse_sequence: each row's first seq_lengths[i] entries along seq_axis reversed,
    the rest kept: a gather_nd of [row, source position] pairs (so its gradient is
    gather_nd's)."""
    ns = _ns()
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else (batch_dim or 0)
    if seq_axis is None:
        raise ValueError("tf.reverse_sequence needs seq_axis (or seq_dim)")
    with _fw.get_default_graph().name_scope(name or "ReverseSequence"):
        x = _fw.convert_to_tensor(input)
        rank = x.shape.ndims
        if rank is None:
            raise ValueError("tf.reverse_sequence: the rank of %s must be known" % x.name)
        seq_axis, batch_axis = int(seq_axis) % rank, int(batch_axis) % rank
        if seq_axis == batch_axis:
            raise ValueError("seq_axis and batch_axis must differ, both are %d" % seq_axis)
        # Move batch to 0 and seq to 1, gather, move back.
        perm = [batch_axis, seq_axis] + [d for d in range(rank) if d not in (batch_axis,
                                                                             seq_axis)]
        moved = x if perm == list(range(rank)) else ns["transpose"](x, perm)
        shape = ns["shape"](moved, out_type=_dtypes.int64)
        lengths = ns["expand_dims"](ns["cast"](seq_lengths, _dtypes.int64), 1)   # [B, 1]
        t = ns["expand_dims"](ns["range"](shape[1]), 0)                          # [1, T]
        rows = ns["expand_dims"](ns["range"](shape[0]), 1)                       # [B, 1]
        source = ns["where_v2"](ns["less"](t, lengths), lengths - 1 - t, t)      # [B, T]
        pairs = _ops.stack([rows + _ops.zeros_like(source), source], axis=-1)  # [B, T, 2]
        out = ns["gather_nd"](moved, pairs)
        if perm == list(range(rank)):
            return out
        inverse = [perm.index(d) for d in range(rank)]
        return ns["transpose"](out, inverse)


def where(condition, x=None, y=None, name=None):
    """tf.where (TF 1.15's v1): with x and y a select (_ops.where); with neither the int64
    coordinates [num_true, rank] of condition's true elements, in row-major order."""
    if x is None and y is None:
        return _ops.apply_op("Where", [condition], {}, name or "Where")
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _ops.where(condition, x, y, name=name)


def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool, name=None):
    """tf.sequence_mask: mask[i..., j] = j < lengths[i...], shape lengths.shape + [maxlen];
    maxlen defaults to max(lengths) (computed when it runs)."""
    ns = _ns()
    with _fw.get_default_graph().name_scope(name or "SequenceMask"):
        lengths = _fw.convert_to_tensor(lengths)
        if not lengths.dtype.is_integer:
            raise TypeError("tf.sequence_mask: lengths must be integers, got %s (%s)"
                            % (lengths.dtype.name, lengths.name))
        if maxlen is None:
            # As TF 1.15: at least 0, so empty or negative lengths give an empty mask.
            maxlen = ns["maximum"](ns["reduce_max"](lengths), 0)
        elif isinstance(maxlen, _fw.Tensor):
            if maxlen.shape.ndims not in (None, 0):
                raise ValueError("maxlen must be scalar for sequence_mask, got shape %s"
                                 % maxlen.shape)
            maxlen = ns["cast"](maxlen, lengths.dtype)
        else:
            maxlen = _fw.constant(int(maxlen), dtype=lengths.dtype)
        positions = ns["range"](_fw.constant(0, dtype=lengths.dtype), maxlen,
                                _fw.constant(1, dtype=lengths.dtype))
        mask = ns["less"](positions, ns["expand_dims"](lengths, -1))
        dtype = _dtypes.as_dtype(dtype)
        return mask if dtype == _dtypes.bool else ns["cast"](mask, dtype)


def _merged_shape(tensor, axis, k):
    """tensor's shape with dims [axis, axis + k) merged into one: a Python list when the
    other dims are known (the merged one is -1), else a computed int32 vector."""
    dims = tensor.shape.as_list()
    rest = dims[:axis] + dims[axis + k:]
    if all(d is not None for d in rest):
        return dims[:axis] + [-1] + dims[axis + k:]
    ns = _ns()
    shape = ns["shape"](tensor)
    merged = ns["reduce_prod"](shape[axis:axis + k], axis=[0], keepdims=True)
    return ns["concat"]([shape[:axis], merged, shape[axis + k:]], 0)


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """tf.boolean_mask: the entries of tensor where mask (rank k, its shape tensor's dims
    [axis, axis + k)) is true, shape tensor.shape[:axis] + [num_true] +
    tensor.shape[axis + k:]; a Gather of the true positions, so its gradient is Gather's."""
    ns = _ns()
    with _fw.get_default_graph().name_scope(name):
        tensor = _fw.convert_to_tensor(tensor)
        mask = _fw.convert_to_tensor(mask)
        if mask.dtype != _dtypes.bool:
            raise TypeError("tf.boolean_mask: mask must be bool, got %s (%s)"
                            % (mask.dtype.name, mask.name))
        k = mask.shape.ndims
        if k is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        if k == 0:
            raise ValueError("mask cannot be scalar.")
        rank = tensor.shape.ndims
        if rank is None:
            raise ValueError("tf.boolean_mask: the rank of tensor %s must be known"
                             % tensor.name)
        axis = 0 if axis is None else int(_ops._static(axis, "axis", "boolean_mask"))
        if axis < 0:
            axis += rank
        if not 0 <= axis or axis + k > rank:
            raise ValueError("tf.boolean_mask: a mask of rank %d at axis %d does not fit "
                             "tensor %s of rank %d" % (k, axis, tensor.name, rank))
        want = tensor.shape.as_list()[axis:axis + k]
        have = mask.shape.as_list()
        for a, b in zip(want, have):
            if a is not None and b is not None and a != b:
                raise ValueError("Shapes %s and %s are incompatible (tensor dims [%d, %d) "
                                 "against the mask)" % (tensor.shape, mask.shape, axis,
                                                        axis + k))
        flat = ns["reshape"](tensor, _merged_shape(tensor, axis, k))
        positions = ns["squeeze"](where(ns["reshape"](mask, [-1])), axis=[1])
        return ns["gather"](flat, positions, axis=axis)


def gather_nd(params, indices, name=None, batch_dims=0):
    """tf.gather_nd; with batch_dims = b > 0 the first b dims of params and indices are
    batch dims (of the same sizes): out[b_1..b_b, i..., rest] = params[b_1..b_b,
    indices[b_1..b_b, i...], rest], as TF 1.15's batch gather_nd. Built as TF's: each index
    tuple gets its batch coordinates prepended, then one GatherNd (whose gradient is
    ScatterNd's). indices' rank must be known."""
    ns = _ns()
    b = int(batch_dims)
    if b == 0:
        return ns["gather_nd"](params, indices, name=name)
    with _fw.get_default_graph().name_scope(name or "GatherNd"):
        idx = _fw.convert_to_tensor(indices)
        x = _fw.convert_to_tensor(params)
        rank = idx.shape.ndims
        if rank is None or x.shape.ndims is None:
            raise ValueError("tf.gather_nd(batch_dims=%d) needs the ranks of params and indices "
                             "known" % b)
        if b < 0 or b >= rank or b > x.shape.ndims:
            raise ValueError("tf.gather_nd: batch_dims %d must be in [0, %d) for indices of "
                             "rank %d and at most params' rank %d"
                             % (b, rank, rank, x.shape.ndims))
        for d in range(b):
            pd, id_ = x.shape.dims[d], idx.shape.dims[d]
            if pd is not None and id_ is not None and pd != id_:
                raise ValueError("tf.gather_nd: batch dim %d of params (%s) and indices (%s) "
                                 "differ" % (d, x.shape, idx.shape))
        like = _ops.zeros_like(_ops._getitem(idx, (Ellipsis, slice(0, 1))))  # [..., 1]
        shape = ns["shape"](idx, out_type=idx.dtype)
        grids = []
        for d in range(b):
            positions = ns["range"](shape[d])  # idx.dtype
            grids.append(ns["reshape"](positions, [1] * d + [-1] + [1] * (rank - 1 - d)) + like)
        return ns["gather_nd"](x, ns["concat"](grids + [idx], -1))
