"""TF 1.15's math functions that TF itself builds from other ops, built here the same way
from Loom's (so their gradients follow by composition): reduce_logsumexp, norm,
count_nonzero, reduce_variance / reduce_std, tensordot (through einsum), log_sigmoid,
nn.swish, nn.selu, eye, linalg.diag_part / trace, matrix_transpose, reverse, broadcast_to,
linspace, segment_sum, unsorted_segment_mean, bincount, meshgrid, linalg.diag / diag,
diag_part, linalg.band_part. docs/python_core.md lists them."""
import string

import numpy as np

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops
from loom.compat.v1 import dtypes as _dtypes


def _ns():
    return _ops.NAMESPACES[""]


def _scope(name, default):
    return _fw.get_default_graph().name_scope(name or default)


def _axis_arg(axis, reduction_indices):
    return axis if axis is not None else reduction_indices


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None):
    """log(sum(exp(x))) over axis, as TF: shifted by the (finite) max, which carries no
    gradient, so large inputs do not overflow."""
    ns = _ns()
    axis = _axis_arg(axis, reduction_indices)
    keep = bool(keepdims or keep_dims)
    with _scope(name, "ReduceLogSumExp"):
        x = _fw.convert_to_tensor(input_tensor)
        raw_max = ns["reduce_max"](x, axis, keepdims=True)
        finite = ns["equal"](raw_max - raw_max, 0.0)  # inf - inf and NaN are NaN
        shift = ns["stop_gradient"](ns["where_v2"](finite, raw_max, _ops.zeros_like(raw_max)))
        total = ns["reduce_sum"](ns["exp"](x - shift), axis, keepdims=keep)
        # The shift's reduced dims have size 1: summing them reshapes it like the result.
        return ns["log"](total) + (shift if keep else ns["reduce_sum"](shift, axis))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):
    """tf.norm / tf.linalg.norm: vector norms (ord 'euclidean' / 'fro', 1, np.inf or any
    p > 0) over all dims or one axis, matrix norms ('fro', 'euclidean', 1, np.inf) over a
    pair of axes."""
    ns = _ns()
    keep = bool(keepdims or keep_dims)
    matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if isinstance(axis, (list, tuple)) and len(axis) not in (1, 2):
        raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, "
                         "got %s" % (axis,))
    if matrix and ord not in ("fro", "euclidean", 1, np.inf):
        raise ValueError("'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, "
                         "inf], got %r (the spectral norm, ord=2, is missing in Loom)" % (ord,))
    if not matrix and not (ord in ("fro", "euclidean", np.inf) or
                           (isinstance(ord, (int, float)) and ord > 0)):
        raise ValueError("'ord' must be a supported vector norm, got %r" % (ord,))
    with _scope(name, "norm"):
        x = _fw.convert_to_tensor(tensor)
        a = ns["abs"](x)
        if ord in ("fro", "euclidean"):
            out = ns["sqrt"](ns["reduce_sum"](x * x, axis, keepdims=True))
        elif matrix:
            rows, cols = axis if ord == 1 else (axis[1], axis[0])
            out = ns["reduce_max"](ns["reduce_sum"](a, [rows], keepdims=True), [cols],
                                   keepdims=True)
        elif ord == np.inf:
            out = ns["reduce_max"](a, axis, keepdims=True)
        elif ord == 1:
            out = ns["reduce_sum"](a, axis, keepdims=True)
        else:
            p = float(ord)
            out = ns["pow"](ns["reduce_sum"](ns["pow"](a, p), axis, keepdims=True), 1.0 / p)
        if keep:
            return out
        if axis is None:
            return ns["reshape"](out, [])
        return ns["squeeze"](out, list(axis) if isinstance(axis, (list, tuple)) else [axis])


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=_dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None):
    """The number of nonzero (true) elements over axis, as `dtype` (default int64)."""
    ns = _ns()
    with _scope(name, "count_nonzero"):
        x = _fw.convert_to_tensor(input_tensor)
        nonzero = (x if x.dtype == _dtypes.bool else
                   ns["not_equal"](x, _fw.constant(0, dtype=x.dtype)))
        counts = ns["reduce_sum"](ns["cast"](nonzero, _dtypes.int64),
                                  _axis_arg(axis, reduction_indices),
                                  keepdims=bool(keepdims or keep_dims))
        dtype = _dtypes.as_dtype(dtype)
        return counts if dtype == _dtypes.int64 else ns["cast"](counts, dtype)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """tf.math.reduce_variance: the mean squared deviation from the mean (biased)."""
    ns = _ns()
    with _scope(name, "reduce_variance"):
        x = _fw.convert_to_tensor(input_tensor)
        mean = ns["reduce_mean"](x, axis, keepdims=True)
        return ns["reduce_mean"](ns["square"](x - mean), axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """tf.math.reduce_std: sqrt(reduce_variance)."""
    with _scope(name, "reduce_std"):
        return _ns()["sqrt"](reduce_variance(input_tensor, axis, keepdims))


def tensordot(a, b, axes, name=None):
    """tf.tensordot: sums over a's `axes[0]` and b's `axes[1]` (an int N: a's last N, b's
    first N), the remaining dims of a then of b; lowered to einsum (a batched product)."""
    from loom.compat.v1._einsum import einsum

    a, b = _fw.convert_to_tensor(a), _fw.convert_to_tensor(b)
    ra, rb = a.shape.ndims, b.shape.ndims
    if ra is None or rb is None:
        raise ValueError("tf.tensordot: the ranks of %s and %s must be known" % (a.name, b.name))
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= min(ra, rb):
            raise ValueError("'axes' must be at most %d, got %d" % (min(ra, rb), axes))
        a_axes, b_axes = list(range(ra - axes, ra)), list(range(axes))
    else:
        a_axes, b_axes = axes
        a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
        b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
        if len(a_axes) != len(b_axes):
            raise ValueError("Different number of contraction axes 'a' and 'b', %d != %d."
                             % (len(a_axes), len(b_axes)))
    a_axes = [d % ra for d in a_axes]
    b_axes = [d % rb for d in b_axes]
    letters = iter(string.ascii_letters)
    la = [next(letters) for _ in range(ra)]
    lb = [next(letters) for _ in range(rb)]
    for i, j in zip(a_axes, b_axes):
        lb[j] = la[i]
    out = [la[i] for i in range(ra) if i not in a_axes] + \
          [lb[j] for j in range(rb) if j not in b_axes]
    return einsum("%s,%s->%s" % ("".join(la), "".join(lb), "".join(out)), a, b,
                  name=name or "Tensordot")


def log_sigmoid(x, name=None):
    """tf.math.log_sigmoid: -softplus(-x), as TF (stable for large |x|)."""
    ns = _ns()
    with _scope(name, "LogSigmoid"):
        return ns["negative"](_ops.NAMESPACES["nn"]["softplus"](ns["negative"](x)))


def swish(features, name=None):
    """tf.nn.swish: x * sigmoid(x)."""
    with _scope(name, "swish"):
        x = _fw.convert_to_tensor(features)
        return x * _ns()["sigmoid"](x)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features, name=None):
    """tf.nn.selu: scale * (x if x > 0 else alpha * (exp(x) - 1)), TF's alpha and scale."""
    ns = _ns()
    with _scope(name, "Selu"):
        x = _fw.convert_to_tensor(features)
        negative = _ops.NAMESPACES["nn"]["elu"](x) * _SELU_ALPHA
        return ns["where_v2"](ns["greater"](x, 0.0), x, negative) * _SELU_SCALE


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    """tf.eye: an identity matrix [num_rows, num_columns] (static sizes), repeated over
    batch_shape."""
    rows = int(_ops._static(num_rows, "num_rows", "eye"))
    cols = rows if num_columns is None else int(_ops._static(num_columns, "num_columns", "eye"))
    value = np.eye(rows, cols)
    if batch_shape is not None:
        batch = [int(d) for d in _ops._static(batch_shape, "batch_shape", "eye")]
        value = np.broadcast_to(value, batch + [rows, cols])
    return _fw.constant(value, dtype=_dtypes.as_dtype(dtype), name=name or "eye")


def _square_corner(x, what):
    dims = x.shape.as_list()
    if len(dims) < 2 or dims[-1] is None or dims[-2] is None:
        raise ValueError("%s: the last two dims of %s must be known, got %s"
                         % (what, x.name, x.shape))
    n = min(dims[-1], dims[-2])
    if dims[-1] != n or dims[-2] != n:
        x = _ops._getitem(x, (Ellipsis, slice(0, n), slice(0, n)))
    return x, n


def matrix_diag_part(input, name=None):  # noqa: A002 (TF's parameter name)
    """tf.linalg.diag_part / tf.matrix_diag_part: x[..., i, i] for i < min(rows, columns)
    (static sizes), by a mask of the identity."""
    with _scope(name, "diag_part"):
        x, n = _square_corner(_fw.convert_to_tensor(input), "tf.linalg.diag_part")
        return _ns()["reduce_sum"](x * eye(n, dtype=x.dtype), [-1])


def trace(x, name=None):
    """tf.linalg.trace / tf.trace: the sum of the main diagonal of the last two dims."""
    with _scope(name, "Trace"):
        return _ns()["reduce_sum"](matrix_diag_part(x), [-1])


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """tf.linalg.matrix_transpose: the last two dims swapped (Loom's dtypes are real, so
    `conjugate` changes nothing)."""
    a = _fw.convert_to_tensor(a)
    rank = a.shape.ndims
    if rank is None or rank < 2:
        raise ValueError("Argument 'a' should be a (batch) matrix, with rank >= 2.  Found: %s"
                         % a.shape)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return _ns()["transpose"](a, perm, name=name)


def reverse(tensor, axis, name=None):
    """tf.reverse: tensor with the dims listed in `axis` reversed (a strided slice)."""
    x = _fw.convert_to_tensor(tensor)
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("tf.reverse: the rank of %s must be known" % x.name)
    axes = _ops._static(axis, "axis", "reverse")
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    flipped = {int(d) % rank for d in axes}
    if len(flipped) != len(axes):
        raise ValueError("tf.reverse: axis %s names a dim twice" % (axes,))
    key = tuple(slice(None, None, -1) if d in flipped else slice(None) for d in range(rank))
    with _scope(name, "ReverseV2"):
        return _ops._getitem(x, key)


def broadcast_to(input, shape, name=None):  # noqa: A002
    """tf.broadcast_to: input broadcast to `shape` (its gradient sums back, by
    composition: input + zeros(shape))."""
    with _scope(name, "BroadcastTo"):
        x = _fw.convert_to_tensor(input)
        if not (x.dtype.is_floating or x.dtype.is_integer):
            raise TypeError("tf.broadcast_to: Loom broadcasts numeric tensors, got %s"
                            % x.dtype.name)
        return x + _ops.zeros(shape, dtype=x.dtype)


def linspace(start, stop, num, name=None):
    """tf.linspace / tf.lin_space: num evenly spaced values from start to stop, both
    included (a static num)."""
    ns = _ns()
    n = int(_ops._static(num, "num", "linspace"))
    if n < 1:
        raise ValueError("tf.linspace: num must be positive, got %d" % n)
    with _scope(name, "LinSpace"):
        start = _fw.convert_to_tensor(start, dtype=_dtypes.float32) \
            if not isinstance(start, _fw.Tensor) else start
        stop = ns["cast"](stop, start.dtype) if isinstance(stop, _fw.Tensor) else \
            _fw.constant(stop, dtype=start.dtype)
        if n == 1:
            return ns["reshape"](start, [1])
        steps = _fw.constant(np.arange(n), dtype=start.dtype)
        return start + steps * ((stop - start) / float(n - 1))


def segment_sum(data, segment_ids, name=None):
    """tf.math.segment_sum: sums of the rows of data sharing a segment id; as many segments
    as the largest id + 1 (none for no ids). The ids must be non-negative and sorted, as
    TF's: the op UnsortedSegmentSum with sorted_ids checks them when it runs (a negative
    id's row used to be dropped silently and unsorted ids summed)."""
    ns = _ns()
    with _scope(name, "SegmentSum"):
        ids = _fw.convert_to_tensor(segment_ids)
        count = ns["maximum"](ns["reduce_max"](ids) + 1, 0)
        return _ops.raw_ops.UnsortedSegmentSum(data, ids, count, sorted_ids=True,
                                               name="SegmentSum")


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """tf.math.unsorted_segment_mean: each segment's sum over its count of rows (0 for an
    empty segment, as TF)."""
    ns = _ns()
    with _scope(name, "UnsortedSegmentMean"):
        data = _fw.convert_to_tensor(data)
        ids = _fw.convert_to_tensor(segment_ids)
        sums = ns["unsorted_segment_sum"](data, ids, num_segments)
        counts = ns["unsorted_segment_sum"](_ops.ones_like(ids, dtype=data.dtype), ids,
                                            num_segments)
        rank, k = data.shape.ndims, ids.shape.ndims
        if rank is None or k is None:
            raise ValueError("tf.math.unsorted_segment_mean: the ranks of data and "
                             "segment_ids must be known")
        counts = ns["reshape"](counts, [-1] + [1] * (rank - k))
        return sums / ns["maximum"](counts, 1)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32):
    """tf.math.bincount: out[v] = how many times v occurs in arr (or the sum of its
    weights), for v in [0, max(max(arr) + 1, minlength)) capped at maxlength (values at or
    above it are dropped)."""
    ns = _ns()
    with _scope(None, "bincount"):
        arr = ns["reshape"](_fw.convert_to_tensor(arr, dtype=_dtypes.int32), [-1])
        size = ns["maximum"](ns["reduce_max"](arr) + 1, 0)
        if minlength is not None:
            size = ns["maximum"](size, int(_ops._static(minlength, "minlength", "bincount")))
        if maxlength is not None:
            cap = int(_ops._static(maxlength, "maxlength", "bincount"))
            size = ns["minimum"](size, cap)
            # Values at or above the cap go to segment -1, which drops them.
            arr = ns["where_v2"](ns["less"](arr, cap), arr, _ops.ones_like(arr) * -1)
        out_dtype = _dtypes.as_dtype(dtype) if weights is None else None
        if weights is None:
            values = _ops.ones_like(arr, dtype=out_dtype)
        else:
            values = ns["reshape"](_fw.convert_to_tensor(weights), [-1])
        return ns["unsorted_segment_sum"](values, arr, size)


def meshgrid(*args, **kwargs):
    """tf.meshgrid(x, y, ..., indexing='xy'): N-D coordinate grids of the 1-D inputs ('xy'
    swaps the first two output dims, as numpy and TF)."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError("Invalid keywords: %s" % sorted(kwargs))
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    ns = _ns()
    with _scope(name, "meshgrid"):
        inputs = [ns["reshape"](_fw.convert_to_tensor(x), [-1]) for x in args]
        n = len(inputs)
        outputs = []
        for i, x in enumerate(inputs):
            shape = [1] * n
            shape[i] = -1
            outputs.append(ns["reshape"](x, shape))
        if indexing == "xy" and n > 1:
            outputs[0] = ns["reshape"](inputs[0], [1, -1] + [1] * (n - 2))
            outputs[1] = ns["reshape"](inputs[1], [-1, 1] + [1] * (n - 2))
        # Broadcast every grid to the full shape: x * ones of the others.
        ones = [_ops.ones_like(o) for o in outputs]
        grids = []
        for i, o in enumerate(outputs):
            g = o
            for j, one in enumerate(ones):
                if j != i:
                    g = g * one
            grids.append(g)
        return grids


def matrix_diag(diagonal, name="diag"):
    """tf.linalg.diag / tf.matrix_diag (and tf.diag of a vector): a batch of square matrices
    with `diagonal` on their main diagonal (its last dim static)."""
    with _scope(name, "diag"):
        d = _fw.convert_to_tensor(diagonal)
        n = d.shape.as_list()[-1] if d.shape.ndims else None
        if n is None:
            raise ValueError("tf.linalg.diag: the last dim of %s must be known" % d.name)
        return _ns()["expand_dims"](d, -1) * eye(n, dtype=d.dtype)


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """tf.linalg.band_part / tf.matrix_band_part: x[..., m, n] kept where (num_lower < 0 or
    m - n <= num_lower) and (num_upper < 0 or n - m <= num_upper), zero elsewhere (static
    last two dims and bands)."""
    with _scope(name, "MatrixBandPart"):
        x = _fw.convert_to_tensor(input)
        dims = x.shape.as_list()
        if len(dims) < 2 or dims[-1] is None or dims[-2] is None:
            raise ValueError("tf.linalg.band_part: the last two dims of %s must be known"
                             % x.name)
        lower = int(_ops._static(num_lower, "num_lower", "band_part"))
        upper = int(_ops._static(num_upper, "num_upper", "band_part"))
        m, n = np.meshgrid(np.arange(dims[-2]), np.arange(dims[-1]), indexing="ij")
        keep = ((lower < 0) | (m - n <= lower)) & ((upper < 0) | (n - m <= upper))
        return x * _fw.constant(keep.astype(np.float64), dtype=x.dtype)


def diag(diagonal, name=None):
    """tf.diag: the square matrix with the vector `diagonal` on its diagonal (TF's
    rank-2k form of a higher-rank input is missing: a ValueError)."""
    d = _fw.convert_to_tensor(diagonal)
    if d.shape.ndims != 1:
        raise ValueError("Loom's tf.diag takes a vector (TF's rank-2k diagonal tensor of a "
                         "rank-k input is missing), got %s; tf.linalg.diag builds batches"
                         % d.shape)
    return matrix_diag(d, name=name or "Diag")


def diag_part(input, name=None):  # noqa: A002
    """tf.diag_part of a matrix (TF's rank-2k form is missing: a ValueError)."""
    x = _fw.convert_to_tensor(input)
    if x.shape.ndims != 2:
        raise ValueError("Loom's tf.diag_part takes a matrix, got %s; tf.linalg.diag_part "
                         "takes batches" % x.shape)
    return matrix_diag_part(x, name=name or "DiagPart")
