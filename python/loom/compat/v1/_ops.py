"""Op functions generated from the C++ op registry (loom._loom.op_defs(): each record's
inputs, attributes with their kinds and defaults, outputs).

Every registered op is a function in `raw_ops` under its Loom name (raw_ops.MatMul(a, b,
transpose_a=True)): its positional arguments are the op's inputs, then its attributes in
declared order; keywords are attribute names. `_TABLE` below maps TF1's names and
argument lists onto records where they differ (tf.reduce_mean's axis/keepdims are the
record's axes/keep_dims; tf.nn.conv2d lives in tf.nn); every other op is exported under
the snake_case of its name (BiasAdd -> bias_add). Nothing here is written per op except
the table rows.

Where TF takes a tensor and the Loom record an attribute (a shape, axes, a permutation),
the function accepts a Python value or a constant tensor (its value is read from the
graph); a computed tensor there is an error that says so."""
import inspect
import re
import types

import numpy as np

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes

RECORDS = {r["name"]: r for r in _loom.op_defs()}

raw_ops = types.ModuleType("loom.compat.v1.raw_ops",
                           "Every registered Loom op under its own name, generated.")


def _graph_of(values):
    for v in values:
        if isinstance(v, _fw.Tensor):
            return v.graph
        if isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, _fw.Tensor):
                    return x.graph
    return _fw.get_default_graph()


def _is_literal(v):
    return not isinstance(v, _fw.Tensor) and not hasattr(v, "_as_tensor")


def _to_inputs(values, same_dtype):
    """Converts op inputs to Tensors. With same_dtype, a literal takes the dtype of the
    first tensor among `values` (x * 2.0 with x float64 multiplies by a float64 2)."""
    hint = None
    if same_dtype:
        for v in values:
            if not _is_literal(v):
                hint = _fw.convert_to_tensor(v).dtype
                break
    out = []
    for v in values:
        if _is_literal(v) and hint is not None:
            out.append(_fw.constant(v, dtype=hint))
        else:
            out.append(_fw.convert_to_tensor(v))
    return out


def constant_value(t):
    """The value of `t` when it is a Python value or a Const node's output, else None."""
    if not isinstance(t, _fw.Tensor):
        return t
    if t.op.type == "Const":
        return t.op.get_attr("value")
    return None


def _static(value, what, op_name):
    v = constant_value(value)
    if v is None and value is not None:
        raise TypeError("%s: argument '%s' must be a Python value or a constant tensor (Loom "
                        "takes it as an attribute of the op); got the computed tensor %s"
                        % (op_name, what, value.name))
    return v.tolist() if isinstance(v, np.ndarray) else v


def _attr_value(v):
    if isinstance(v, _dtypes.DType):
        return v._enum
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def apply_op(op_type, inputs, attrs=None, name=None, same_dtype=False):
    """Adds a node of the registered op `op_type`; returns its outputs (one Tensor when
    the op has one output, a list otherwise)."""
    inputs = _to_inputs(inputs, same_dtype)
    graph = _graph_of(inputs)
    for t in inputs:
        if t.graph is not graph:
            raise ValueError("%s must be from the same graph as %s." % (t.name, inputs[0].name))
    attrs = dict(attrs or {})
    if isinstance(attrs.get("seed"), _OpSeed):
        attrs["seed"], attrs["seed2"] = _op_seeds(graph, attrs["seed"].value)
    attrs = {k: _attr_value(v) for k, v in attrs.items()}
    op = graph._add_node(op_type, name or op_type, inputs, attrs)
    outs = op.outputs
    record = RECORDS[op_type]
    if len(outs) == 0:
        return op
    if record["num_outputs"] == 1:
        return outs[0]
    return outs


_SAME_DTYPE = {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "Pow", "Equal", "NotEqual",
               "Less", "LessEqual", "Greater", "GreaterEqual", "SquaredDifference", "FloorDiv", "FloorMod",
               "AddN", "BiasAdd", "MatMul", "BatchMatMul", "Assign", "AssignAdd", "AssignSub",
               "ClipByValue", "SoftmaxCrossEntropyWithLogits", "SigmoidCrossEntropyWithLogits",
               "Atan2"}


def _raw_function(record):
    """raw_ops.<Name>(*inputs, *attrs, name=None, **attrs)."""
    op_type = record["name"]
    n = record["num_inputs"]
    attr_names = [a["name"] for a in record["attrs"]]
    same = op_type in _SAME_DTYPE

    def f(*args, name=None, **kwargs):
        if n == -1:
            if not args:
                raise TypeError("%s takes a list of inputs" % op_type)
            inputs, rest = list(args[0]), args[1:]
        else:
            if len(args) < n:
                raise TypeError("%s takes %d inputs, got %d" % (op_type, n, len(args)))
            inputs, rest = list(args[:n]), args[n:]
        attrs = {}
        for a, v in zip(attr_names, rest):
            attrs[a] = v
        for k, v in kwargs.items():
            if k not in attr_names:
                raise TypeError("%s got an unexpected keyword argument '%s'; its attributes "
                                "are %s" % (op_type, k, ", ".join(attr_names) or "none"))
            attrs[k] = v
        return apply_op(op_type, inputs, attrs, name, same)
    f.__name__ = op_type
    f.__doc__ = "The Loom op %s: %s input(s), attributes %s." % (
        op_type, "variadic" if n == -1 else n,
        ", ".join("%s: %s%s" % (a["name"], a["type"],
                               (" = %r" % (a["default"],)) if "default" in a else "")
                  for a in record["attrs"]) or "none")
    return f


for _name, _record in RECORDS.items():
    setattr(raw_ops, _name, _raw_function(_record))


def snake_case(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower().replace("2_d", "2d")


# --- TF1's names -------------------------------------------------------------------------
# A row: (namespaces, tf name, loom op, tf signature, how tf arguments become attributes).
# The signature lists TF's parameters in TF's order; those named in `inputs` are the op's
# inputs, the others attributes. `attrs` maps a TF parameter to (loom attribute, convert),
# convert(value, bound arguments) -> the attribute's value, or None to drop the parameter
# (accepted for TF's signature, no effect in Loom).

def _axes(v, args):
    if v is None and args is not None:
        v = args.get("reduction_indices")  # TF1's older name for axis
    if v is None:
        return []
    v = _static(v, "axis", "reduce")
    return [int(v)] if isinstance(v, (int, np.integer)) else [int(a) for a in v]


def _keepdims(v, args):
    kd = args.get("keep_dims")
    return bool(v or kd)


def _int(v, args):
    return int(_static(v, "axis", "op"))


def _ints(v, args):
    return [int(x) for x in _static(v, "shape", "op")]


def _dtype(v, args):
    return _dtypes.as_dtype(v)


_DROP = (None, None)

_TABLE = [
    # math, elementwise
    (("", "math"), "add", "Add", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "subtract", "Sub", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "multiply", "Mul", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "realdiv", "Div", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "maximum", "Maximum", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "minimum", "Minimum", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "pow", "Pow", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "negative", "Neg", "x, name=None", ("x",), {}),
    (("", "math"), "abs", "Abs", "x, name=None", ("x",), {}),
    (("", "math"), "square", "Square", "x, name=None", ("x",), {}),
    (("", "math"), "sign", "Sign", "x, name=None", ("x",), {}),
    (("", "math"), "exp", "Exp", "x, name=None", ("x",), {}),
    (("", "math"), "log", "Log", "x, name=None", ("x",), {}),
    (("", "math"), "log1p", "Log1p", "x, name=None", ("x",), {}),
    (("", "math"), "sqrt", "Sqrt", "x, name=None", ("x",), {}),
    (("", "math"), "rsqrt", "Rsqrt", "x, name=None", ("x",), {}),
    (("", "math"), "reciprocal", "Reciprocal", "x, name=None", ("x",), {}),
    (("", "math"), "floor", "Floor", "x, name=None", ("x",), {}),
    (("", "math"), "round", "Round", "x, name=None", ("x",), {}),
    (("", "math"), "ceil", "Ceil", "x, name=None", ("x",), {}),
    (("", "math"), "sin", "Sin", "x, name=None", ("x",), {}),
    (("", "math"), "cos", "Cos", "x, name=None", ("x",), {}),
    (("", "math"), "tan", "Tan", "x, name=None", ("x",), {}),
    (("", "math"), "asin", "Asin", "x, name=None", ("x",), {}),
    (("", "math"), "acos", "Acos", "x, name=None", ("x",), {}),
    (("", "math"), "atan", "Atan", "x, name=None", ("x",), {}),
    (("", "math"), "atan2", "Atan2", "y, x, name=None", ("y", "x"), {}),
    (("", "math"), "sinh", "Sinh", "x, name=None", ("x",), {}),
    (("", "math"), "cosh", "Cosh", "x, name=None", ("x",), {}),
    (("", "math"), "expm1", "Expm1", "x, name=None", ("x",), {}),
    (("", "math"), "erf", "Erf", "x, name=None", ("x",), {}),
    (("", "math", "nn"), "sigmoid", "Sigmoid", "x, name=None", ("x",), {}),
    (("", "math", "nn"), "tanh", "Tanh", "x, name=None", ("x",), {}),
    (("", "math"), "equal", "Equal", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "not_equal", "NotEqual", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "less", "Less", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "less_equal", "LessEqual", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "greater", "Greater", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "greater_equal", "GreaterEqual", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "logical_and", "LogicalAnd", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "logical_or", "LogicalOr", "x, y, name=None", ("x", "y"), {}),
    (("", "math"), "logical_not", "LogicalNot", "x, name=None", ("x",), {}),
    (("", "math"), "add_n", "AddN", "inputs, name=None", ("*inputs",), {}),
    (("", "math"), "clip_by_value", "ClipByValue",
     "t, clip_value_min, clip_value_max, name=None", ("t", "clip_value_min", "clip_value_max"), {}),
    (("", "math"), "cast", "Cast", "x, dtype, name=None", ("x",), {"dtype": ("DstT", _dtype)}),
    (("", "linalg"), "matmul", "MatMul",
     "a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, "
     "a_is_sparse=False, b_is_sparse=False, name=None", ("a", "b"),
     {"adjoint_a": _DROP, "adjoint_b": _DROP, "a_is_sparse": _DROP, "b_is_sparse": _DROP}),
    # reductions
    (("", "math"), "reduce_sum", "Sum",
     "input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None",
     ("input_tensor",), {"axis": ("axes", _axes), "keepdims": ("keep_dims", _keepdims),
                         "reduction_indices": _DROP, "keep_dims": _DROP}),
    (("", "math"), "reduce_mean", "Mean",
     "input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None",
     ("input_tensor",), {"axis": ("axes", _axes), "keepdims": ("keep_dims", _keepdims),
                         "reduction_indices": _DROP, "keep_dims": _DROP}),
    (("", "math"), "reduce_max", "Max",
     "input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None",
     ("input_tensor",), {"axis": ("axes", _axes), "keepdims": ("keep_dims", _keepdims),
                         "reduction_indices": _DROP, "keep_dims": _DROP}),
    (("", "math"), "reduce_min", "Min",
     "input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None",
     ("input_tensor",), {"axis": ("axes", _axes), "keepdims": ("keep_dims", _keepdims),
                         "reduction_indices": _DROP, "keep_dims": _DROP}),
    (("", "math"), "reduce_prod", "Prod",
     "input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None",
     ("input_tensor",), {"axis": ("axes", _axes), "keepdims": ("keep_dims", _keepdims),
                         "reduction_indices": _DROP, "keep_dims": _DROP}),
    (("", "math"), "reduce_any", "Any",
     "input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None",
     ("input_tensor",), {"axis": ("axes", _axes), "keepdims": ("keep_dims", _keepdims),
                         "reduction_indices": _DROP, "keep_dims": _DROP}),
    (("", "math"), "reduce_all", "All",
     "input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None",
     ("input_tensor",), {"axis": ("axes", _axes), "keepdims": ("keep_dims", _keepdims),
                         "reduction_indices": _DROP, "keep_dims": _DROP}),
    (("", "math"), "argmax", "ArgMax",
     "input, axis=None, name=None, dimension=None, output_type=None", ("input",),
     {"axis": ("axis", lambda v, a: int(_static(v if v is not None else a.get("dimension") or 0,
                                               "axis", "argmax"))),
      "dimension": _DROP, "output_type": _DROP}),
    (("", "math"), "argmin", "ArgMin",
     "input, axis=None, name=None, dimension=None, output_type=None", ("input",),
     {"axis": ("axis", lambda v, a: int(_static(v if v is not None else a.get("dimension") or 0,
                                               "axis", "argmin"))),
      "dimension": _DROP, "output_type": _DROP}),
    # arrays
    (("",), "reshape", "Reshape", "tensor, shape, name=None", ("tensor",), {"shape": ("shape", _ints)}),
    (("",), "ensure_shape", "EnsureShape", "x, shape, name=None", ("x",),
     {"shape": ("shape", lambda v, a: _fw._as_shape(v))}),
    (("",), "transpose", "Transpose", "a, perm=None, name=None, conjugate=False", ("a",),
     {"perm": ("perm", lambda v, a: _ints(v, a) if v is not None else
               list(range(len(a["a"].shape) - 1, -1, -1))), "conjugate": _DROP}),
    (("",), "expand_dims", "ExpandDims", "input, axis=None, name=None, dim=None", ("input",),
     {"axis": ("axis", lambda v, a: int(_static(v if v is not None else a.get("dim"), "axis",
                                              "expand_dims"))), "dim": _DROP}),
    (("",), "squeeze", "Squeeze", "input, axis=None, name=None, squeeze_dims=None", ("input",),
     {"axis": ("axes", lambda v, a: _axes(v if v is not None else a.get("squeeze_dims"), a)),
      "squeeze_dims": _DROP}),
    (("",), "tile", "Tile", "input, multiples, name=None", ("input",),
     {"multiples": ("multiples", _ints)}),
    (("",), "gather", "Gather",
     "params, indices, validate_indices=None, name=None, axis=None, batch_dims=0",
     ("params", "indices"), {"axis": ("axis", lambda v, a: 0 if v is None else _int(v, a)),
                            "validate_indices": _DROP,
                            "batch_dims": ("batch_dims", lambda v, a: _no_batch_dims(v))}),
    (("",), "gather_nd", "GatherNd", "params, indices, name=None, batch_dims=0",
     ("params", "indices"), {"batch_dims": ("batch_dims", lambda v, a: _no_batch_dims_nd(v))}),
    (("",), "scatter_nd", "ScatterNd", "indices, updates, shape, name=None",
     ("indices", "updates", "shape"), {}),
    (("", "math"), "unsorted_segment_sum", "UnsortedSegmentSum",
     "data, segment_ids, num_segments, name=None", ("data", "segment_ids", "num_segments"), {}),
    (("", "math"), "cumsum", "Cumsum", "x, axis=0, exclusive=False, reverse=False, name=None",
     ("x",), {"axis": ("axis", _int)}),
    (("", "math"), "cumprod", "Cumprod", "x, axis=0, exclusive=False, reverse=False, name=None",
     ("x",), {"axis": ("axis", _int)}),
    (("",), "one_hot", "OneHot",
     "indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None",
     ("indices",), {"depth": ("depth", _int),
                    "on_value": ("on", lambda v, a: 1.0 if v is None else float(_static(v, "on_value", "one_hot"))),
                    "off_value": ("off", lambda v, a: 0.0 if v is None else float(_static(v, "off_value", "one_hot"))),
                    "axis": ("axis", lambda v, a: -1 if v is None else int(v)),
                    "dtype": ("dtype", lambda v, a: _dtypes.float32 if v is None else _dtypes.as_dtype(v))}),
    (("",), "slice", "Slice", "input_, begin, size, name=None", ("input_",),
     {"begin": ("begin", _ints), "size": ("size", _ints)}),
    (("",), "shape", "Shape", "input, name=None, out_type=None", ("input",), {"out_type": _DROP}),
    (("",), "size", "Size", "input, name=None, out_type=None", ("input",), {"out_type": _DROP}),
    (("",), "rank", "Rank", "input, name=None", ("input",), {}),
    (("",), "identity", "Identity", "input, name=None", ("input",), {}),
    (("",), "stop_gradient", "StopGradient", "input, name=None", ("input",), {}),
    (("",), "no_op", "NoOp", "name=None", (), {}),
    (("",), "where_v2", "Select", "condition, x=None, y=None, name=None", ("condition", "x", "y"), {}),
    (("",), "pad", "Pad", "tensor, paddings, mode='CONSTANT', name=None, constant_values=0",
     ("tensor",), {"paddings": ("paddings", lambda v, a: [int(x) for row in _static(v, "paddings", "pad") for x in row]),
                   "mode": ("mode", lambda v, a: _constant_mode(v)),
                   "constant_values": ("constant", lambda v, a: float(_static(v, "constant_values", "pad")))}),
    # random
    (("", "random"), "random_normal", "RandomNormal",
     "shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None", (),
     {"shape": ("shape", _ints), "dtype": ("dtype", _dtype), "mean": ("mean", None),
      "stddev": ("stddev", None), "seed": ("seed", lambda v, a: _seed(v))}),
    (("", "random"), "truncated_normal", "TruncatedNormal",
     "shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None", (),
     {"shape": ("shape", _ints), "dtype": ("dtype", _dtype), "mean": ("mean", None),
      "stddev": ("stddev", None), "seed": ("seed", lambda v, a: _seed(v))}),
    (("", "random"), "random_uniform", "RandomUniform",
     "shape, minval=0, maxval=None, dtype=tf.float32, seed=None, name=None", (),
     {"shape": ("shape", _ints), "dtype": ("dtype", _dtype),
      "minval": ("minval", lambda v, a: float(v)),
      "maxval": ("maxval", lambda v, a: 1.0 if v is None else float(v)),
      "seed": ("seed", lambda v, a: _seed(v))}),
    # nn
    (("nn",), "relu", "Relu", "features, name=None", ("features",), {}),
    (("nn",), "relu6", "Relu6", "features, name=None", ("features",), {}),
    (("nn",), "elu", "Elu", "features, name=None", ("features",), {}),
    (("nn",), "softplus", "Softplus", "features, name=None", ("features",), {}),
    (("nn",), "leaky_relu", "LeakyRelu", "features, alpha=0.2, name=None", ("features",), {}),
    (("nn",), "bias_add", "BiasAdd", "value, bias, data_format=None, name=None",
     ("value", "bias"), {"data_format": ("data_format", lambda v, a: _channels_last(v))}),
    (("nn", "math"), "softmax", "Softmax", "logits, axis=None, name=None, dim=None", ("logits",),
     {"axis": ("axis", lambda v, a: -1 if v is None and a.get("dim") is None else int(v if v is not None else a["dim"])),
      "dim": _DROP}),
    (("nn", "math"), "log_softmax", "LogSoftmax", "logits, axis=None, name=None, dim=None", ("logits",),
     {"axis": ("axis", lambda v, a: -1 if v is None and a.get("dim") is None else int(v if v is not None else a["dim"])),
      "dim": _DROP}),
    (("nn",), "conv2d", "Conv2D",
     "input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True, data_format='NHWC', "
     "dilations=[1, 1, 1, 1], name=None, filters=None", ("input", "filter"),
     {"strides": ("strides", _ints), "padding": ("padding", lambda v, a: str(v).upper()),
      "use_cudnn_on_gpu": _DROP, "data_format": ("data_format", lambda v, a: _nhwc(v)),
      "dilations": ("dilations", lambda v, a: _no_dilation(v)), "filters": _DROP}),
    (("nn",), "max_pool", "MaxPool",
     "value, ksize, strides, padding, data_format='NHWC', name=None, input=None", ("value",),
     {"ksize": ("ksize", _ints), "strides": ("strides", _ints),
      "padding": ("padding", lambda v, a: str(v).upper()),
      "data_format": ("data_format", lambda v, a: _nhwc(v)), "input": _DROP}),
    (("nn",), "avg_pool", "AvgPool",
     "value, ksize, strides, padding, data_format='NHWC', name=None, input=None", ("value",),
     {"ksize": ("ksize", _ints), "strides": ("strides", _ints),
      "padding": ("padding", lambda v, a: str(v).upper()),
      "data_format": ("data_format", lambda v, a: _nhwc(v)), "input": _DROP}),
    (("nn",), "l2_loss", "L2Loss", "t, name=None", ("t",), {}),
    (("nn",), "softmax_cross_entropy_with_logits_v2", "SoftmaxCrossEntropyWithLogits",
     "_sentinel=None, labels=None, logits=None, axis=-1, name=None, dim=None", ("labels", "logits"),
     {"_sentinel": _DROP, "axis": ("axis", lambda v, a: _last_axis(v)), "dim": _DROP}),
    (("nn",), "softmax_cross_entropy_with_logits", "SoftmaxCrossEntropyWithLogits",
     "_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None", ("labels", "logits"),
     {"_sentinel": _DROP, "dim": ("axis", lambda v, a: _last_axis(v)), "axis": _DROP}),
    (("nn",), "sparse_softmax_cross_entropy_with_logits", "SparseSoftmaxCrossEntropyWithLogits",
     "_sentinel=None, labels=None, logits=None, name=None", ("labels", "logits"), {"_sentinel": _DROP}),
    (("nn",), "sigmoid_cross_entropy_with_logits", "SigmoidCrossEntropyWithLogits",
     "_sentinel=None, labels=None, logits=None, name=None", ("labels", "logits"), {"_sentinel": _DROP}),
    (("nn", "math"), "in_top_k", "InTopK", "predictions, targets, k, name=None",
     ("predictions", "targets"), {"k": ("k", _int)}),
]


class _OpSeed:
    """An op's `seed` argument (None or an int) as given; apply_op turns it into the
    record's seed / seed2 pair by TF1's rule (_op_seeds), which needs the graph."""

    def __init__(self, value):
        self.value = None if value is None else int(value)


def _seed(v):
    return _OpSeed(v)


_DEFAULT_GRAPH_SEED = 87654321  # TF's random_seed.DEFAULT_GRAPH_SEED


def _op_seeds(graph, op_seed):
    """TF1's random_seed.get_seed, as loom/ops/random.cc's OpSeeds (what the C++ builders
    use): with a graph seed g, (g, the op seed or else the node id the op is about to
    get), so a program that calls tf.set_random_seed draws the same numbers every run;
    with only an op seed o, (DEFAULT_GRAPH_SEED, o); with neither, (0, 0): seeded from
    the OS when the Session first runs the op."""
    g = graph._g.seed
    if g >= 0:
        seed, seed2 = g, (op_seed if op_seed is not None else graph._g.num_nodes)
    elif op_seed is not None:
        seed, seed2 = _DEFAULT_GRAPH_SEED, op_seed
    else:
        return 0, 0
    if seed == 0 and seed2 == 0:
        seed2 = 2 ** 31 - 1  # (0, 0) would mean "no seed"
    return seed, seed2


def _nhwc(v):
    if v not in (None, "NHWC"):
        raise ValueError("Loom's convolutions and pools take data_format='NHWC' only, got %r" % v)
    return None


def _no_batch_dims(v):
    if v not in (None, 0):
        raise NotImplementedError("Loom's tf.gather has no batch_dims (got %r); gather each "
                                  "batch row with tf.map_fn, or flatten the indices" % (v,))
    return None


def _no_batch_dims_nd(v):
    if v not in (None, 0):
        raise NotImplementedError("Loom's tf.gather_nd has no batch_dims (got %r); prepend the "
                                  "batch index to each index tuple instead" % (v,))
    return None


def _channels_last(v):
    if v not in (None, "NHWC", "NWC", "NDHWC", "NC"):
        raise NotImplementedError("Loom's tf.nn.bias_add adds the bias on the last dimension "
                                  "(data_format NHWC); got data_format=%r: transpose to "
                                  "channels-last first" % (v,))
    return None


def _constant_mode(v):
    if v is not None and str(v).upper() != "CONSTANT":
        raise NotImplementedError("internal: tf.pad mode %r reaches the Pad op" % (v,))
    return None


def _no_dilation(v):
    if v is not None and any(int(d) != 1 for d in v):
        raise ValueError("Loom's conv2d has no dilations; got %r" % (v,))
    return None


def _last_axis(v):
    if v not in (None, -1):
        raise ValueError("Loom's cross entropies take axis=-1 (the last) only, got %r" % (v,))
    return None


def _parse_signature(sig):
    params = []
    env = {"tf": types.SimpleNamespace(float32=_dtypes.float32)}
    for part in re.split(r",\s*(?![^\[]*\])", sig):
        part = part.strip()
        if not part:
            continue
        if "=" in part:
            name, default = part.split("=", 1)
            params.append(inspect.Parameter(name.strip(), inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=eval(default, env)))  # noqa: S307
        else:
            params.append(inspect.Parameter(part, inspect.Parameter.POSITIONAL_OR_KEYWORD))
    return inspect.Signature(params)


def _tf_function(tf_name, op_type, sig, inputs, attrs):
    record = RECORDS.get(op_type)
    if record is None:
        return None  # an op this build does not register
    signature = _parse_signature(sig)
    declared = {a["name"] for a in record["attrs"]}
    same = op_type in _SAME_DTYPE
    variadic = len(inputs) == 1 and inputs[0].startswith("*")
    input_names = [inputs[0][1:]] if variadic else list(inputs)

    def f(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        name = a.get("name")
        values = list(a[input_names[0]]) if variadic else [a[n] for n in input_names]
        op_attrs = {}
        for p in signature.parameters:
            if p == "name" or p in input_names:
                continue
            rule = attrs.get(p, (p, None))
            loom_attr, convert = rule
            if loom_attr is None:
                continue
            value = a[p]
            if convert is not None:
                value = convert(value, a)
            elif isinstance(value, _fw.Tensor):
                value = _static(value, p, tf_name)
            if value is None:
                continue
            if loom_attr not in declared:
                continue
            op_attrs[loom_attr] = value
        out = apply_op(op_type, values, op_attrs, name or op_type, same)
        # Every TF function in the table returns one tensor: an op's extra outputs (the
        # cross entropies' backprop, Dropout's mask) stay internal.
        return out[0] if isinstance(out, list) and record["num_outputs"] > 1 else out

    f.__name__ = tf_name
    f.__signature__ = signature
    f.__doc__ = "tf.%s, the Loom op %s." % (tf_name, op_type)
    return f


def _internal(name):
    # Switch / Merge are tf.cond's parts (control_flow.py), the TensorArray ops
    # tf.TensorArray's (_tensor_array.py): in raw_ops only, as in TF1.
    return name.endswith("Grad") or "Backprop" in name or name.startswith("Test") or \
        name.startswith("TensorArray") or name in ("Switch", "Merge")


NAMESPACES = {"": {}, "math": {}, "nn": {}, "linalg": {}, "random": {}}
_mapped = set()
for _ns, _tf, _op_type, _sig, _inputs, _attrs in _TABLE:
    _fn = _tf_function(_tf, _op_type, _sig, _inputs, _attrs)
    if _fn is None:
        continue
    _mapped.add(_op_type)
    for _n in _ns:
        NAMESPACES[_n][_tf] = _fn

# The unmapped records, under their snake_case names in tf (generated functions).
for _name, _record in RECORDS.items():
    if _name in _mapped or _internal(_name):
        continue
    _snake = snake_case(_name)
    if _snake not in NAMESPACES[""]:
        NAMESPACES[""][_snake] = getattr(raw_ops, _name)


# --- composites TF1 has that Loom spells with several ops --------------------------------
def stack(values, axis=0, name="stack"):
    """tf.stack as TF 1.15: Python values (and constants) take the dtype of the first
    Tensor among `values` (tf.stack([x_int64, 3]) is int64); with no Tensor at all the list
    converts as one value (tf.stack([1, 2.0]) is float32, as tf.constant([1, 2.0]))."""
    values = list(values)
    if not values:
        raise ValueError("tf.stack needs at least one value")
    def holds_tensor(v):
        if not _is_literal(v):
            return True
        return isinstance(v, (list, tuple)) and any(holds_tensor(x) for x in v)

    packed = {i: _fw.convert_to_tensor(v) for i, v in enumerate(values) if holds_tensor(v)}
    if not packed:
        whole = _fw._to_numpy(values)
        values = [_fw.constant(v, dtype=_dtypes.as_dtype(whole.dtype)) for v in values]
    else:
        hint = packed[min(packed)].dtype
        values = [packed[i] if i in packed else _fw.convert_to_tensor(v, dtype=hint)
                  for i, v in enumerate(values)]
        for v in values:
            if v.dtype != hint:
                raise TypeError("tf.stack: the values have dtypes %s and %s (%s); TF 1.15 "
                                "stacks one dtype: cast them first"
                                % (hint.name, v.dtype.name, v.name))
    rank = values[0].shape.ndims
    if rank is not None and not -(rank + 1) <= axis < rank + 1:
        raise ValueError("axis = %d not in [%d, %d)" % (axis, -(rank + 1), rank + 1))
    with _fw.get_default_graph().name_scope(name):
        expanded = [NAMESPACES[""]["expand_dims"](v, axis) for v in values]
        return raw_ops.Concat(expanded, axis)


def concat(values, axis, name="concat"):
    return raw_ops.Concat(list(values), int(_static(axis, "axis", "concat")), name=name)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    if not isinstance(num_or_size_splits, (int, np.integer)):
        raise NotImplementedError("Loom's split takes a number of equal splits")
    return raw_ops.Split(value, int(_static(axis, "axis", "split")), int(num_or_size_splits),
                         name=name)


def unstack(value, num=None, axis=0, name="unstack"):
    value = _fw.convert_to_tensor(value)
    rank = value.shape.ndims
    if rank is not None and not -rank <= axis < rank:
        raise ValueError("tf.unstack: axis = %d not in [%d, %d) for %s of shape %s"
                         % (axis, -rank, rank, value.name, value.shape))
    n = num if num is not None else value.shape.as_list()[axis]
    if n is None:
        raise ValueError("tf.unstack: cannot infer num from %s of shape %s (dim %d is "
                         "unknown); pass num" % (value.name, value.shape, axis))
    parts = raw_ops.Split(value, axis, n, name=name) if n > 1 else [value]
    return [NAMESPACES[""]["squeeze"](p, axis) for p in parts]


def _dims_tensor(shape, what):
    """`shape` as a computed 1-D int32/int64 Tensor (tf.shape(x), or a list holding
    computed scalars: [tf.shape(x)[0], 3]), or None when it is static (ints, a
    TensorShape, a constant), as TF 1.15's zeros / ones / fill take either."""
    if isinstance(shape, _fw.Tensor):
        if constant_value(shape) is not None:
            return None
        dims = shape
    elif isinstance(shape, (list, tuple)) and any(
            isinstance(d, _fw.Tensor) and constant_value(d) is None for d in shape):
        dims = stack(list(shape), name="shape")
    else:
        return None
    if dims.dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("%s: a shape tensor must be int32 or int64, got %s (%s)"
                        % (what, dims.dtype.name, dims.name))
    if dims.shape.ndims == 0:
        dims = NAMESPACES[""]["reshape"](dims, [-1])
    elif dims.shape.ndims not in (None, 1):
        raise ValueError("%s: a shape tensor must be a vector, got shape %s (%s)"
                         % (what, dims.shape, dims.name))
    # A shape carries no gradient (TF's Fill gives None for dims); without the cut,
    # tf.gradients of x + tf.zeros(tf.shape(x)) would reach FillDynamic through Shape(x).
    return NAMESPACES[""]["stop_gradient"](dims, name="shape")


def _zero_of(dtype):
    dtype = _dtypes.as_dtype(dtype)
    return False if dtype == _dtypes.bool else "" if dtype == _dtypes.string else 0


def _filled(shape, value, dtype, name, what):
    dims = _dims_tensor(shape, what)
    if dims is None:
        if isinstance(shape, (list, tuple)):
            static = [constant_value(d) if isinstance(d, _fw.Tensor) else d for d in shape]
            static = [int(np.asarray(d).reshape(())) if d is not None else None for d in static]
        else:
            static = _static(shape, "shape", what)
        if static is None:
            raise ValueError("%s: shape must not be None" % what)
        static = _fw.TensorShape(static)
        if not static.is_fully_defined():
            raise ValueError("%s: shape %s is only partly known; pass tf.shape(x) for a "
                             "shape known at run time" % (what, static))
        return _fw.constant(value, dtype=dtype, shape=static.as_list(), name=name)
    v = _fw.constant(value, dtype=dtype, name=name + "/value")
    return raw_ops.FillDynamic(dims, v, name=name)


def zeros(shape, dtype=_dtypes.float32, name=None):
    """tf.zeros: a static shape gives a constant; a computed one (tf.shape(x)) a Fill of
    that shape at run time, as TF 1.15."""
    return _filled(shape, _zero_of(dtype), dtype, name or "zeros", "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    return _filled(shape, True if _dtypes.as_dtype(dtype) == _dtypes.bool else 1, dtype,
                   name or "ones", "ones")


def fill(dims, value, name=None):
    value = _fw.convert_to_tensor(value)
    shape = _dims_tensor(dims, "fill")
    if shape is None:
        return raw_ops.Fill(value, _ints(dims, None), name=name or "Fill")
    if constant_value(value) is None and value.dtype.is_floating:
        # A computed value gets TF's gradient (the sum of the incoming one): ones * value.
        with _fw.get_default_graph().name_scope(name or "Fill"):
            ones = raw_ops.FillDynamic(shape, _fw.constant(1, dtype=value.dtype), name="ones")
            return NAMESPACES[""]["multiply"](ones, value, name="filled")
    return raw_ops.FillDynamic(shape, value, name=name or "Fill")


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """tf.zeros_like as TF 1.15: zeros of `tensor`'s shape and dtype (or `dtype`),
    whatever its values (NaN and Inf included); with optimize and a fully defined static
    shape a constant that does not read `tensor`, else a run-time op on its shape."""
    tensor = _fw.convert_to_tensor(tensor)
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else tensor.dtype
    name = name or "zeros_like"
    if optimize and tensor.shape.is_fully_defined():
        return zeros(tensor.shape.as_list(), dtype=dtype, name=name)
    if dtype != tensor.dtype or dtype in (_dtypes.bool, _dtypes.string):
        with _fw.get_default_graph().name_scope(name):
            return zeros(NAMESPACES[""]["shape"](tensor), dtype=dtype, name="zeros")
    return raw_ops.ZerosLike(tensor, name=name)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """tf.ones_like as TF 1.15: ones of `tensor`'s shape and dtype (or `dtype`)."""
    tensor = _fw.convert_to_tensor(tensor)
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else tensor.dtype
    name = name or "ones_like"
    if optimize and tensor.shape.is_fully_defined():
        return ones(tensor.shape.as_list(), dtype=dtype, name=name)
    with _fw.get_default_graph().name_scope(name):
        return ones(NAMESPACES[""]["shape"](tensor), dtype=dtype, name="ones")


def squared_difference(x, y, name=None):
    with _fw.get_default_graph().name_scope(name or "SquaredDifference"):
        d = NAMESPACES[""]["subtract"](x, y)
        return NAMESPACES[""]["square"](d)


def where(condition, x=None, y=None, name=None):
    """tf.where (TF 1.15's v1, the Select op): a vector condition with x of higher rank
    picks whole rows (x[i] where condition[i], else y[i]); where_v2 would broadcast it
    along the last dimension, a silently different answer for a square x."""
    if x is None or y is None:
        raise NotImplementedError("Loom's tf.where needs x and y (a select)")
    condition = _fw.convert_to_tensor(condition)
    x, y = _to_inputs([x, y], True)
    rank = x.shape.ndims
    if condition.shape.ndims == 1 and rank is not None and rank >= 2:
        n, rows = condition.shape.as_list()[0], x.shape.as_list()[0]
        if n is not None and rows is not None and n != rows:
            raise ValueError("tf.where: a vector condition picks rows of x; its size %d must "
                             "be x's first dimension, got x of shape %s" % (n, x.shape))
        condition = NAMESPACES[""]["reshape"](condition, [-1] + [1] * (rank - 1))
    return NAMESPACES[""]["where_v2"](condition, x, y, name=name)


_select = NAMESPACES[""]["where_v2"]


def where_v2(condition, x=None, y=None, name=None):
    """tf.where_v2 (the Select op, numpy-style broadcasting): a Python value among x and y
    takes the other's dtype, as TF's op conversion does (tf.where_v2(c, x_float64, 0.0)
    selects a float64 0; it was a float32 constant and a dtype error)."""
    if x is None or y is None:
        raise NotImplementedError("Loom's tf.where_v2 needs x and y (a select)")
    x, y = _to_inputs([x, y], True)
    return _select(condition, x, y, name=name)


NAMESPACES[""]["where_v2"] = where_v2


# TF 1.15's _TRUEDIV_TABLE: `x / y`, tf.divide and tf.truediv turn integer operands into
# floats first (int32 and int64 into float64), so 7 / 2 is 3.5, never a truncated 3.
_TRUEDIV_FLOAT = {"uint8": _dtypes.float32, "int32": _dtypes.float64,
                  "int64": _dtypes.float64}


def truediv(x, y, name=None):
    """tf.truediv / tf.divide / `x / y`: true division; integer operands are cast to float
    as TF's _TRUEDIV_TABLE says (uint8 to float32, int32 and int64 to float64); bool is a
    TypeError, as in TF."""
    x, y = _to_inputs([x, y], True)
    if x.dtype != y.dtype:
        raise TypeError("x and y must have the same dtype, got %r != %r" % (x.dtype, y.dtype))
    if not (x.dtype.is_floating or x.dtype.name in _TRUEDIV_FLOAT):
        raise TypeError("Invalid dtype %r in __truediv__" % (x.dtype,))
    to = _TRUEDIV_FLOAT.get(x.dtype.name)
    if to is not None:
        x, y = NAMESPACES[""]["cast"](x, to), NAMESPACES[""]["cast"](y, to)
    return raw_ops.Div(x, y, name=name or "truediv")


def divide(x, y, name=None):
    """tf.divide / tf.math.divide: `x / y` (true division, see truediv)."""
    return truediv(x, y, name=name or "div")


def div(x, y, name=None):
    """tf.div (TF1's Python 2 semantics): floor division for integers, true division for
    floats."""
    x, y = _to_inputs([x, y], True)
    if x.dtype.is_floating:
        return raw_ops.Div(x, y, name=name or "div")
    return raw_ops.FloorDiv(x, y, name=name or "div")


def floordiv(x, y, name=None):
    """tf.floordiv / `x // y`: TF's FloorDiv, the quotient rounded toward -inf for every
    dtype (-7 // 2 == -4; floor(x / y) for floats). Not differentiable (wrap it in
    tf.stop_gradient where that is meant)."""
    return raw_ops.FloorDiv(x, y, name=name or "floordiv")


def floormod(x, y, name=None):
    """tf.math.floormod / tf.mod / `x % y`: TF's FloorMod, the remainder with y's sign
    (-7 % 2 == 1, 7 % -2 == -1), integers and floats (exact, from fmod); gradients 1 and
    -floor(x / y), as TF's."""
    return raw_ops.FloorMod(x, y, name=name or "floormod")


def range_(start, limit=None, delta=1, dtype=None, name="range"):
    """tf.range(limit) / tf.range(start, limit, delta, dtype): TF 1.15's Range. Without
    `dtype` the arguments' dtypes decide, as TF's inference (int32 < int64 < float32 <
    float64; Python ints are int32, floats float32); a computed limit gives a length known
    only when it runs."""
    if limit is None:
        start, limit = 0, start
    args = [start, limit, delta]
    if dtype is None:
        order = [_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64]
        seen = []
        for v in args:
            if isinstance(v, _fw.Tensor):
                seen.append(v.dtype)
            else:
                seen.append(_dtypes.float32 if isinstance(v, (float, np.floating)) or (
                    isinstance(v, np.ndarray) and v.dtype.kind == "f") else _dtypes.int32)
        dtype = max(seen, key=lambda d: order.index(d) if d in order else -1)
    dtype = _dtypes.as_dtype(dtype)
    cast = NAMESPACES[""]["cast"]
    values = [cast(v, dtype) if isinstance(v, _fw.Tensor) else
              _fw.constant(v, dtype=dtype) for v in args]
    return raw_ops.Range(*values, name=name)


for _ns in ("", "math"):
    NAMESPACES[_ns].update(truediv=truediv, divide=divide, div=div)
NAMESPACES[""]["range"] = range_


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """tf.nn.dropout: rate = 1 - keep_prob. A computed keep_prob or rate (the placeholder
    "Deep MNIST for experts" feeds 0.5 to train and 1.0 to evaluate) is the op
    DropoutWithRate's input, checked in [0, 1) when it runs."""
    if noise_shape is not None and (
            not _fw.convert_to_tensor(x).shape.is_fully_defined() or
            list(_ints(noise_shape, None)) != _fw.convert_to_tensor(x).shape.as_list()):
        raise NotImplementedError("tf.nn.dropout(noise_shape=%r): only x's own shape is "
                                  "supported (one mask element per element)" % (noise_shape,))
    if rate is None:
        if keep_prob is None:
            raise ValueError("dropout needs keep_prob or rate")
        static = constant_value(keep_prob)
        rate = None if static is None else 1.0 - float(static)
        if rate is None:
            x = _fw.convert_to_tensor(x)
            with _fw.get_default_graph().name_scope(name or "dropout"):
                keep = _fw.convert_to_tensor(keep_prob)
                return raw_ops.DropoutWithRate(
                    x, NAMESPACES[""]["subtract"](_fw.constant(1.0, dtype=keep.dtype), keep),
                    _seed(seed), name="dropout")[0]
    elif constant_value(rate) is None:
        x = _fw.convert_to_tensor(x)
        return raw_ops.DropoutWithRate(x, rate, _seed(seed), name=name or "dropout")[0]
    return raw_ops.Dropout(x, float(_static(rate, "rate", "dropout")), _seed(seed),
                           name=name or "dropout")[0]


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """tf.nn.embedding_lookup: the rows of params at ids (any shape), a Gather, whose
    gradient into params is IndexedSlices (sparse optimizer updates) as TF's."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("embedding_lookup: partitioned params (a list of %d) "
                                      "are not supported; pass one tensor" % len(params))
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup: max_norm is not supported")
    return NAMESPACES[""]["gather"](params, ids, name=name or "embedding_lookup")


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    ns = NAMESPACES[""]
    with _fw.get_default_graph().name_scope(name or "l2_normalize"):
        sq = ns["reduce_sum"](ns["square"](x), axis if axis is not None else dim, keepdims=True)
        return ns["multiply"](x, ns["rsqrt"](ns["maximum"](sq, epsilon)))


# --- Tensor operators and slicing ----------------------------------------------------------
def _binary(tf_name, reverse=False):
    def op(self, other):
        fn = NAMESPACES[""][tf_name]
        return fn(other, self) if reverse else fn(self, other)
    return op


def _getitem(tensor, key):
    """t[1:3], t[:, tf.newaxis], t[..., 0], t[::-1] as one StridedSlice."""
    if not isinstance(key, tuple):
        key = (key,)
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_mask = 0
    for i, k in enumerate(key):
        bit = 1 << i
        if isinstance(k, slice):
            start = _static(k.start, "slice start", "getitem") if k.start is not None else None
            stop = _static(k.stop, "slice stop", "getitem") if k.stop is not None else None
            step = _static(k.step, "slice step", "getitem") if k.step is not None else 1
            begin.append(0 if start is None else int(start))
            end.append(0 if stop is None else int(stop))
            strides.append(int(step))
            if start is None:
                begin_mask |= bit
            if stop is None:
                end_mask |= bit
        elif k is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            ellipsis_mask |= bit
        elif k is None:
            begin.append(0), end.append(0), strides.append(1)
            new_axis_mask |= bit
        else:
            v = int(_static(k, "index", "getitem"))
            begin.append(v), end.append(v + 1), strides.append(1)
            shrink_mask |= bit
    return raw_ops.StridedSlice(tensor, begin, end, strides, begin_mask=begin_mask,
                                end_mask=end_mask, ellipsis_mask=ellipsis_mask,
                                new_axis_mask=new_axis_mask, shrink_axis_mask=shrink_mask,
                                name="strided_slice")


def _install_operators():
    T = _fw.Tensor
    T.__add__ = _binary("add")
    T.__radd__ = _binary("add", True)
    T.__sub__ = _binary("subtract")
    T.__rsub__ = _binary("subtract", True)
    T.__mul__ = _binary("multiply")
    T.__rmul__ = _binary("multiply", True)
    T.__truediv__ = lambda s, o: truediv(s, o)
    T.__rtruediv__ = lambda s, o: truediv(o, s)
    T.__floordiv__ = lambda s, o: floordiv(s, o)
    T.__rfloordiv__ = lambda s, o: floordiv(o, s)
    T.__mod__ = lambda s, o: floormod(s, o)
    T.__rmod__ = lambda s, o: floormod(o, s)
    T.__pow__ = _binary("pow")
    T.__rpow__ = _binary("pow", True)
    T.__matmul__ = _binary("matmul")
    T.__rmatmul__ = _binary("matmul", True)
    T.__lt__ = _binary("less")
    T.__le__ = _binary("less_equal")
    T.__gt__ = _binary("greater")
    T.__ge__ = _binary("greater_equal")
    T.__and__ = _binary("logical_and")
    T.__rand__ = _binary("logical_and", True)
    T.__or__ = _binary("logical_or")
    T.__ror__ = _binary("logical_or", True)
    T.__invert__ = lambda s: NAMESPACES[""]["logical_not"](s)
    T.__neg__ = lambda s: NAMESPACES[""]["negative"](s)
    T.__abs__ = lambda s: NAMESPACES[""]["abs"](s)
    T.__getitem__ = _getitem


_install_operators()


# --- more composites ------------------------------------------------------------------
_reshape_static = NAMESPACES[""]["reshape"]


def reshape(tensor, shape, name=None):
    """tf.reshape: a Python or constant shape is the Reshape op's attribute; a computed one
    (tf.shape(x)[0], ...) goes to ReshapeDynamic."""
    if isinstance(shape, (list, tuple)) and any(
            isinstance(s, _fw.Tensor) and constant_value(s) is None for s in shape):
        shape = stack([_fw.convert_to_tensor(s, dtype=_dtypes.int32) if not isinstance(s, _fw.Tensor)
                       else s for s in shape])
    if isinstance(shape, _fw.Tensor) and constant_value(shape) is None:
        return raw_ops.ReshapeDynamic(tensor, shape, name=name or "Reshape")
    return _reshape_static(tensor, shape, name=name)


NAMESPACES[""]["reshape"] = reshape


def _with_out_type(generated, what, keyword, position, default):
    """tf.shape / tf.size (out_type) and tf.argmax / tf.argmin (output_type): Loom's ops
    give int64; the dtype asked for, by keyword or at `position`, is honoured with a Cast
    instead of being dropped, and without one the result has TF 1.15's default dtype
    (int32 for shape and size, int64 for argmax and argmin)."""

    def f(*args, **kwargs):
        args = list(args)
        out_type = kwargs.pop(keyword, None)
        if len(args) > position:
            out_type = args.pop(position)
        out_type = default if out_type is None else _dtypes.as_dtype(out_type)
        out = generated(*args, **kwargs)
        if out_type == out.dtype:
            return out
        if out_type not in (_dtypes.int32, _dtypes.int64):
            raise TypeError("tf.%s: %s must be int32 or int64, got %s"
                            % (what, keyword, out_type.name))
        return NAMESPACES[""]["cast"](out, out_type)

    f.__name__ = what
    f.__doc__ = generated.__doc__
    return f


for _what, _keyword, _position, _default in (
        ("shape", "out_type", 2, _dtypes.int32), ("size", "out_type", 2, _dtypes.int32),
        ("argmax", "output_type", 4, _dtypes.int64), ("argmin", "output_type", 4, _dtypes.int64)):
    for _ns in ("", "math"):
        if _what in NAMESPACES[_ns]:
            NAMESPACES[_ns][_what] = _with_out_type(NAMESPACES[_ns][_what], _what, _keyword,
                                                    _position, _default)


def _values_of(t):
    """A sparse gradient's (IndexedSlices') values, or t itself: TF's global norms and
    clipping read the values of an IndexedSlices."""
    from loom.compat.v1.train import IndexedSlices  # train imports this module

    return t.values if isinstance(t, IndexedSlices) else t


def global_norm(t_list, name=None):
    present = [_fw.convert_to_tensor(_values_of(t)) for t in t_list if t is not None]
    return raw_ops.GlobalNorm(present, name=name or "global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """tf.clip_by_global_norm: (each t * clip_norm / max(global_norm, clip_norm), the
    global norm); None entries stay None, an IndexedSlices (an embedding's gradient) is
    clipped in its values and stays IndexedSlices, as TF's."""
    from loom.compat.v1.train import IndexedSlices

    t_list = list(t_list)
    present = [t for t in t_list if t is not None]
    if not present:
        raise ValueError("clip_by_global_norm: every tensor in t_list is None")
    with _fw.get_default_graph().name_scope(name or "clip_by_global_norm"):
        norm = use_norm if use_norm is not None else global_norm(present)
        dtype = _fw.convert_to_tensor(_values_of(present[0])).dtype
        clip = clip_norm if isinstance(clip_norm, _fw.Tensor) else _fw.constant(clip_norm, dtype=dtype)

        def clipped(t):
            if t is None:
                return None
            if isinstance(t, IndexedSlices):
                return IndexedSlices(raw_ops.ClipToGlobalNorm(t.values, norm, clip), t.indices,
                                     t.dense_shape)
            return raw_ops.ClipToGlobalNorm(t, norm, clip)

        out = [clipped(t) for t in t_list]
    return out, norm


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """tf.nn.moments: (mean, variance) over `axes`."""
    ns = NAMESPACES[""]
    keep = bool(keepdims or keep_dims)
    with _fw.get_default_graph().name_scope(name or "moments"):
        mean = ns["reduce_mean"](x, axes, keepdims=True)
        variance = ns["reduce_mean"](ns["square"](ns["subtract"](x, mean)), axes, keepdims=True)
        if not keep:
            mean = ns["squeeze"](mean, axes)
            variance = ns["squeeze"](variance, axes)
    return mean, variance


def _rank_int32(generated):
    """tf.rank: TF 1.15 gives int32 (Loom's Rank op gives int64)."""

    def rank(input, name=None):  # noqa: A002 (TF's parameter name)
        out = generated(input, name=name)
        return out if out.dtype == _dtypes.int32 else NAMESPACES[""]["cast"](out, _dtypes.int32)

    rank.__doc__ = generated.__doc__
    return rank


for _ns in ("", "math"):
    if "rank" in NAMESPACES[_ns]:
        NAMESPACES[_ns]["rank"] = _rank_int32(NAMESPACES[_ns]["rank"])


def _empty_axes(axis):
    if axis is None:
        return False
    v = constant_value(axis)
    return v is not None and np.size(v) == 0


def _reduction(generated):
    """A reduction as TF 1.15: axis=None reduces every dimension, but an explicit empty
    axis list (axis=[], reduction_indices=[]) reduces none: the input itself (Loom's ops
    read an empty axes attribute as "all", which gave the total instead)."""

    def f(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
          keep_dims=None):
        chosen = axis if axis is not None else reduction_indices
        if _empty_axes(chosen):
            return NAMESPACES[""]["identity"](input_tensor, name=name or "Identity")
        return generated(input_tensor, axis=axis, keepdims=keepdims, name=name,
                         reduction_indices=reduction_indices, keep_dims=keep_dims)

    f.__name__ = generated.__name__
    f.__doc__ = generated.__doc__
    return f


for _ns in ("", "math"):
    for _what in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                  "reduce_any", "reduce_all"):
        if _what in NAMESPACES[_ns]:
            NAMESPACES[_ns][_what] = _reduction(NAMESPACES[_ns][_what])


def _matmul_batched(generated):
    """tf.matmul as TF 1.15: inputs of rank >= 3 multiply batch by batch (BatchMatMul)."""

    def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
               a_is_sparse=False, b_is_sparse=False, name=None):
        a, b = _to_inputs([a, b], True)
        if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        # Loom's dtypes are real: the adjoint is the transpose (the table dropped it).
        transpose_a, transpose_b = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
        ranks = (a.shape.ndims, b.shape.ndims)
        if all(r is not None for r in ranks) and max(ranks) >= 3:
            return raw_ops.BatchMatMul(a, b, transpose_a=bool(transpose_a),
                                       transpose_b=bool(transpose_b), name=name or "MatMul")
        return generated(a, b, transpose_a=transpose_a, transpose_b=transpose_b,
                         a_is_sparse=a_is_sparse, b_is_sparse=b_is_sparse, name=name)

    matmul.__doc__ = generated.__doc__
    return matmul


for _ns in ("", "linalg"):
    if "matmul" in NAMESPACES[_ns]:
        NAMESPACES[_ns]["matmul"] = _matmul_batched(NAMESPACES[_ns]["matmul"])


def _to(dtype, default_name):
    def convert(x, name=default_name):
        return NAMESPACES[""]["cast"](x, dtype, name=name)

    convert.__name__ = default_name
    convert.__doc__ = "tf.%s (TF1, deprecated there): tf.cast(x, %s)." % (default_name, dtype.name)
    return convert


# TF1's cast shorthands (a cast to int truncates toward zero, as tf.cast).
for _tf_name, _dtype_to, _op_name in (("to_float", _dtypes.float32, "ToFloat"),
                                      ("to_double", _dtypes.float64, "ToDouble"),
                                      ("to_int32", _dtypes.int32, "ToInt32"),
                                      ("to_int64", _dtypes.int64, "ToInt64")):
    NAMESPACES[""][_tf_name] = _to(_dtype_to, _op_name)


def _pad_modes(generated):
    """tf.pad as TF 1.15: mode CONSTANT is Loom's Pad op; REFLECT and SYMMETRIC (which the
    table dropped before, padding with zeros instead) are built from reversed slices of
    the input, axis by axis (static paddings and dims)."""

    def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
        m = str(mode).upper()
        if m == "CONSTANT":
            return generated(tensor, paddings, name=name, constant_values=constant_values)
        if m not in ("REFLECT", "SYMMETRIC"):
            raise ValueError("Unknown padding mode: %s" % mode)
        x = _fw.convert_to_tensor(tensor)
        pads = [[int(p) for p in row] for row in _static(paddings, "paddings", "pad")]
        rank = x.shape.ndims
        if rank is None or len(pads) != rank:
            raise ValueError("tf.pad: paddings %s must have one [before, after] row per "
                             "dimension of %s" % (pads, x.shape))
        off = 1 if m == "REFLECT" else 0
        with _fw.get_default_graph().name_scope(name or "MirrorPad"):
            for axis, (before, after) in enumerate(pads):
                if before == 0 and after == 0:
                    continue
                n = x.shape.as_list()[axis]
                if n is None:
                    raise NotImplementedError("tf.pad(mode=%s): dimension %d of %s must be "
                                              "known" % (m, axis, x.shape))
                if before < 0 or after < 0 or max(before, after) > n - off:
                    raise ValueError("tf.pad(mode=%s): paddings must be %s the dimension size "
                                     "%d: got %d, %d on dimension %d" % (
                                         m, "less than" if off else "no greater than", n,
                                         before, after, axis))
                lead = (slice(None),) * axis

                def flipped(lo, hi):
                    part = _getitem(x, lead + (slice(lo, hi),))
                    return _getitem(part, lead + (slice(None, None, -1),))

                parts = []
                if before:
                    parts.append(flipped(off, off + before))
                parts.append(x)
                if after:
                    parts.append(flipped(n - off - after, n - off))
                x = raw_ops.Concat(parts, axis)
            return NAMESPACES[""]["identity"](x, name="padded")

    pad.__doc__ = generated.__doc__
    return pad


NAMESPACES[""]["pad"] = _pad_modes(NAMESPACES[""]["pad"])


def _labels_stop_gradient(generated):
    """tf.nn.softmax_cross_entropy_with_logits (TF 1.15's deprecated v1): as _v2, but
    backpropagation happens only into logits (TF wraps labels in stop_gradient); the table
    mapped both to the same op, so a gradient reached trainable labels."""

    def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                          name=None, axis=None):
        if _sentinel is not None:
            raise ValueError("Only call `softmax_cross_entropy_with_logits` with named "
                             "arguments (labels=..., logits=..., ...)")
        if labels is None or logits is None:
            raise ValueError("Both labels and logits must be provided.")
        labels = NAMESPACES[""]["stop_gradient"](labels, name="labels_stop_gradient")
        return generated(labels=labels, logits=logits, dim=dim, name=name, axis=axis)

    softmax_cross_entropy_with_logits.__doc__ = generated.__doc__
    return softmax_cross_entropy_with_logits


NAMESPACES["nn"]["softmax_cross_entropy_with_logits"] = _labels_stop_gradient(
    NAMESPACES["nn"]["softmax_cross_entropy_with_logits"])
