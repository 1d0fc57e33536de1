"""TF 1.15's element-wise functions that are compositions of Loom's ops (gradients by
composition): is_nan / is_inf / is_finite, divide_no_nan, multiply_no_nan, xlogy, xdivy,
reciprocal_no_nan, logical_xor, softsign, crelu, rint, polyval, reduce_euclidean_norm and
clip_by_average_norm. The *_no_nan forms keep their gradients finite where they return 0
(the unused branch divides by a safe 1), as TF's. docs/python_core.md lists them."""
import numpy as np

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops


def _ns():
    return _ops.NAMESPACES[""]


def _pair(x, y):
    return _ops._to_inputs([x, y], True)


def _scope(name, default):
    return _fw.get_default_graph().name_scope(name or default)


def is_nan(x, name=None):
    """NaN is the only value not equal to itself."""
    with _scope(name, "IsNan"):
        x = _fw.convert_to_tensor(x)
        return _ns()["not_equal"](x, x)


def is_inf(x, name=None):
    with _scope(name, "IsInf"):
        x = _fw.convert_to_tensor(x)
        return _ns()["equal"](_ns()["abs"](x), np.inf)


def is_finite(x, name=None):
    """x - x is 0 for finite x and NaN for inf and NaN."""
    with _scope(name, "IsFinite"):
        x = _fw.convert_to_tensor(x)
        return _ns()["equal"](x - x, 0)


def divide_no_nan(x, y, name=None):
    """x / y, or 0 where y is 0."""
    ns = _ns()
    with _scope(name, "div_no_nan"):
        x, y = _pair(x, y)
        zero = ns["equal"](y, 0)
        safe = ns["where_v2"](zero, _ops.ones_like(y), y)
        return ns["where_v2"](zero, _ops.zeros_like(x * y), x / safe)


def multiply_no_nan(x, y, name=None):
    """x * y, or 0 where y is 0 (even where x is inf or NaN)."""
    ns = _ns()
    with _scope(name, "multiply_no_nan"):
        x, y = _pair(x, y)
        product = x * y
        return ns["where_v2"](ns["equal"](y, 0), _ops.zeros_like(product), product)


def xlogy(x, y, name=None):
    """x * log(y), or 0 where x is 0."""
    ns = _ns()
    with _scope(name, "xlogy"):
        x, y = _pair(x, y)
        zero = ns["equal"](x, 0)
        safe = ns["where_v2"](zero, _ops.ones_like(y), y)
        return ns["where_v2"](zero, _ops.zeros_like(x * y), x * ns["log"](safe))


def xdivy(x, y, name=None):
    """x / y, or 0 where x is 0."""
    ns = _ns()
    with _scope(name, "xdivy"):
        x, y = _pair(x, y)
        zero = ns["equal"](x, 0)
        safe = ns["where_v2"](zero, _ops.ones_like(y), y)
        return ns["where_v2"](zero, _ops.zeros_like(x * y), x / safe)


def reciprocal_no_nan(x, name=None):
    """1 / x, or 0 where x is 0."""
    with _scope(name, "reciprocal_no_nan"):
        x = _fw.convert_to_tensor(x)
        return divide_no_nan(_ops.ones_like(x), x)


def logical_xor(x, y, name="LogicalXor"):
    ns = _ns()
    with _scope(name, "LogicalXor"):
        return ns["logical_and"](ns["logical_or"](x, y), ns["logical_not"](ns["logical_and"](x, y)))


def softsign(features, name=None):
    """x / (1 + |x|)."""
    with _scope(name, "Softsign"):
        x = _fw.convert_to_tensor(features)
        return x / (_ns()["abs"](x) + 1)


def crelu(features, name=None, axis=-1):
    """concat([relu(x), relu(-x)], axis)."""
    nn = _ops.NAMESPACES["nn"]
    with _scope(name, "CRelu"):
        x = _fw.convert_to_tensor(features)
        rank = x.shape.ndims
        if rank is None:
            raise ValueError("tf.nn.crelu: the rank of %s must be known" % x.name)
        return _ops.concat([nn["relu"](x), nn["relu"](_ns()["negative"](x))], int(axis) % rank)


def rint(x, name=None):
    """The nearest integer, halves to even (tf.math.rint = Round for floats)."""
    return _ns()["round"](x, name=name or "Rint")


def polyval(coeffs, x, name=None):
    """coeffs[0] * x^(n-1) + ... + coeffs[n-1], by Horner's rule."""
    with _scope(name, "polyval"):
        x = _fw.convert_to_tensor(x)
        coeffs = list(coeffs)
        if not coeffs:
            return _ops.zeros_like(x)
        result = _fw.convert_to_tensor(coeffs[0], dtype=x.dtype) + _ops.zeros_like(x)
        for c in coeffs[1:]:
            result = result * x + c
        return result


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(reduce_sum(x^2)) over axis."""
    ns = _ns()
    with _scope(name, "EuclideanNorm"):
        x = _fw.convert_to_tensor(input_tensor)
        return ns["sqrt"](ns["reduce_sum"](x * x, axis, keepdims=keepdims))


def clip_by_average_norm(t, clip_norm, name=None):
    """TF 1.15's (deprecated): t * clip_norm / max(l2norm(t) / n, clip_norm), n = t's
    element count, as t * clip_norm * min(n / l2norm(t), 1 / clip_norm)."""
    ns = _ns()
    with _scope(name, "clip_by_average_norm"):
        t = _fw.convert_to_tensor(t)
        clip = _fw.convert_to_tensor(clip_norm, dtype=t.dtype)
        n = ns["cast"](ns["size"](t), t.dtype)
        l2norm_inv = ns["rsqrt"](ns["reduce_sum"](t * t))
        return ns["identity"](t * clip * ns["minimum"](l2norm_inv * n, 1.0 / clip),
                              name="clipped")
