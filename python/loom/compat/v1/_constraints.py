"""tf.keras.constraints: projections of a weight after each optimizer update, as
`kernel_constraint=` / `bias_constraint=` of tf.layers and `constraint=` of tf.Variable /
tf.get_variable take them (the optimizers apply them, _variables._apply_constraints).
The formulas are Keras's (TF 1.15), with its epsilon 1e-7; `axis` is the axis (or axes)
the norm is taken over: 0 for a Dense kernel's columns, [0, 1, 2] for a Conv2D filter."""
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops

_EPSILON = 1e-7


def _op(name):
    return _ops.NAMESPACES[""][name]


def _norms(w, axis):
    return _op("sqrt")(_op("reduce_sum")(_op("square")(w), axis=axis, keepdims=True))


class Constraint:
    """The base class: a callable from a weight to its projected value."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}


class MaxNorm(Constraint):
    """w * clip(norm, 0, max_value) / (epsilon + norm)."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = _op("clip_by_value")(norms, 0.0, float(self.max_value))
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """w with its negative entries set to 0."""

    def __call__(self, w):
        return w * _op("cast")(_op("greater_equal")(w, _fw.constant(0.0, dtype=w.dtype)),
                               w.dtype)


class UnitNorm(Constraint):
    """w / (epsilon + norm)."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (_EPSILON + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """w * (rate * clip(norm, min_value, max_value) + (1 - rate) * norm) / (epsilon +
    norm)."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        clipped = _op("clip_by_value")(norms, float(self.min_value), float(self.max_value))
        desired = float(self.rate) * clipped + (1.0 - float(self.rate)) * norms
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm
