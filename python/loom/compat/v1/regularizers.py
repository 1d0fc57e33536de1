"""Weight regularizers as TF1 code writes them: tf.contrib.layers.l1_regularizer /
l2_regularizer / l1_l2_regularizer / sum_regularizer / apply_regularization, and
tf.keras.regularizers.l1 / l2 / l1_l2 (L1L2). Each is a Python function of a weight
tensor returning a scalar penalty (or None: no penalty), as in TF; tf.layers and
tf.get_variable pass it the variable and add the penalty to
tf.GraphKeys.REGULARIZATION_LOSSES (the C++ graph's collection, so
tf.losses.get_regularization_loss() and the C++ side see it).

Note the two families differ, as in TF: contrib's l2 is scale * sum(w^2) / 2
(tf.nn.l2_loss), keras' l2 is l * sum(w^2)."""
import numbers

from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import logging as _logging


def _ops():
    from loom.compat.v1 import _ops as ops
    return ops.NAMESPACES[""]


def _check_scale(scale):
    if isinstance(scale, numbers.Integral):
        raise ValueError("scale cannot be an integer: %s" % (scale,))
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError("Setting a scale less than 0 on a regularizer: %g" % scale)
        if scale == 0.0:
            _logging.info("Scale of 0 disables regularizer.")
            return False
    return True


def _scale(scale, weights, name="scale"):
    return _fw.constant(scale, dtype=weights.dtype.base_dtype, name=name)


def l1_regularizer(scale, scope=None):
    """tf.contrib.layers.l1_regularizer: scale * sum(|w|)."""
    if not _check_scale(scale):
        return lambda _: None

    def l1(weights):
        ops = _ops()
        with _fw.name_scope(scope, "l1_regularizer", [weights]):
            return ops["multiply"](_scale(scale, weights), ops["reduce_sum"](ops["abs"](weights)))
    return l1


def l2_regularizer(scale, scope=None):
    """tf.contrib.layers.l2_regularizer: scale * sum(w^2) / 2 (scale * tf.nn.l2_loss(w))."""
    if not _check_scale(scale):
        return lambda _: None

    def l2(weights):
        from loom.compat.v1 import _ops as ops_module
        l2_loss = ops_module.NAMESPACES["nn"]["l2_loss"]
        with _fw.name_scope(scope, "l2_regularizer", [weights]):
            return _ops()["multiply"](_scale(scale, weights), l2_loss(weights))
    return l2


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """tf.contrib.layers.l1_l2_regularizer: the sum of l1_regularizer(scale_l1) and
    l2_regularizer(scale_l2)."""
    if isinstance(scale_l1, numbers.Integral):
        raise ValueError("scale_l1 cannot be an integer: %s" % (scale_l1,))
    if isinstance(scale_l2, numbers.Integral):
        raise ValueError("scale_l2 cannot be an integer: %s" % (scale_l2,))
    scope = scope or "l1_l2_regularizer"
    if scale_l1 == 0.0:
        return l2_regularizer(scale_l2, scope)
    if scale_l2 == 0.0:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def sum_regularizer(regularizer_list, scope=None):
    """tf.contrib.layers.sum_regularizer: the sum of the regularizers' penalties (None
    when all are None)."""
    regularizer_list = [r for r in regularizer_list if r]
    if not regularizer_list:
        return None

    def sum_reg(weights):
        with _fw.name_scope(scope, "sum_regularizer", [weights]):
            penalties = [p for p in (r(weights) for r in regularizer_list) if p is not None]
            if not penalties:
                return None
            return _ops()["add_n"](penalties)
    return sum_reg


def apply_regularization(regularizer, weights_list=None):
    """tf.contrib.layers.apply_regularization: the sum of regularizer(w) over weights_list
    (default: the graph's WEIGHTS collection), added to REGULARIZATION_LOSSES."""
    if not weights_list:
        weights_list = _fw.get_collection(_fw.GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with _fw.name_scope("get_regularization_penalty", values=weights_list):
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p for p in penalties if p is not None]
        summed = _ops()["add_n"](penalties) if penalties else _fw.constant(0.0)
    _fw.add_to_collection(_fw.GraphKeys.REGULARIZATION_LOSSES, summed)
    return summed


class Regularizer:
    """tf.keras.regularizers.Regularizer."""

    def __call__(self, x):
        return 0.0

    def get_config(self):
        return {}


class L1L2(Regularizer):
    """tf.keras.regularizers.L1L2: l1 * sum(|x|) + l2 * sum(x^2)."""

    def __init__(self, l1=0.0, l2=0.0):  # noqa: E741
        self.l1 = float(l1)
        self.l2 = float(l2)

    def __call__(self, x):
        ops = _ops()
        if not self.l1 and not self.l2:
            return _fw.constant(0.0, dtype=x.dtype.base_dtype)
        terms = []
        if self.l1:
            terms.append(ops["multiply"](_scale(self.l1, x), ops["reduce_sum"](ops["abs"](x))))
        if self.l2:
            terms.append(ops["multiply"](_scale(self.l2, x),
                                         ops["reduce_sum"](ops["square"](x))))
        return terms[0] if len(terms) == 1 else ops["add"](terms[0], terms[1])

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


def keras_l1(l=0.01):  # noqa: E741
    """tf.keras.regularizers.l1."""
    return L1L2(l1=l)


def keras_l2(l=0.01):  # noqa: E741
    """tf.keras.regularizers.l2."""
    return L1L2(l2=l)


def keras_l1_l2(l1=0.01, l2=0.01):
    """tf.keras.regularizers.l1_l2."""
    return L1L2(l1=l1, l2=l2)
