"""loom.compat.v1: TensorFlow 1.x's Python API over Loom.

    import loom.compat.v1 as tf

What is bound, what differs and what is missing: docs/python_core.md."""
from loom import _loom
from loom.compat.v1 import dtypes
from loom.compat.v1 import errors
from loom.compat.v1 import logging
from loom.compat.v1 import _framework
from loom.compat.v1 import _ops
from loom.compat.v1 import _session
from loom.compat.v1 import _variables
from loom.compat.v1.dtypes import (DType, as_dtype, bool, double, float32, float64, int32,  # noqa: A004
                                   int64, string, uint8)
from loom.compat.v1._framework import (Dimension, Graph, GraphKeys, Operation, Tensor,
                                       TensorShape, add_to_collection, add_to_collections,
                                       constant, control_dependencies, convert_to_tensor,
                                       get_collection, get_collection_ref, get_default_graph,
                                       name_scope, placeholder, reset_default_graph,
                                       set_random_seed)
from loom.compat.v1._session import (ConfigProto, GPUOptions, InteractiveSession, RunMetadata,
                                     RunOptions, Session, get_default_session)
from loom.compat.v1._variables import (AUTO_REUSE, Variable, VariableScope, assign, assign_add,
                                       assign_sub, constant_initializer, get_variable,
                                       get_variable_scope, global_variables,
                                       global_variables_initializer, glorot_normal_initializer,
                                       glorot_uniform_initializer, group,
                                       initialize_all_variables, local_variables,
                                       local_variables_initializer, make_template,
                                       model_variables, moving_average_variables,
                                       ones_initializer,
                                       random_normal_initializer,
                                       random_uniform_initializer, trainable_variables,
                                       truncated_normal_initializer, variable_scope,
                                       variables_initializer, variance_scaling_initializer,
                                       zeros_initializer)
from loom.compat.v1._script_ops import numpy_function, py_func
from loom.compat.v1._ops import (clip_by_global_norm, concat, fill, floordiv, floormod,
                                 global_norm, ones, ones_like, raw_ops, reshape, split,
                                 squared_difference, stack, unstack, zeros, zeros_like)
from loom.compat.v1._selection import (argsort, boolean_mask, gather_nd, reverse_sequence,
                                       sequence_mask, sort, unique, unique_with_counts, where)
from loom.compat.v1._clip_ops import clip_by_norm
from loom.compat.v1._einsum import einsum
from loom.compat.v1 import _math_ops
from loom.compat.v1._math_ops import (bincount, broadcast_to, count_nonzero, diag, diag_part,
                                      eye, linspace,
                                      log_sigmoid, matrix_band_part, matrix_diag,
                                      matrix_diag_part, matrix_transpose, meshgrid, norm,
                                      reduce_logsumexp, reverse, segment_sum, tensordot,
                                      trace, unsorted_segment_mean)

from loom.compat.v1 import _elementwise as _elementwise  # noqa: E402
from loom.compat.v1._elementwise import (clip_by_average_norm, divide_no_nan, is_finite,
                                         is_inf, is_nan, logical_xor, polyval,
                                         reciprocal_no_nan, rint, xdivy, xlogy)

lin_space = linspace
reverse_v2 = reverse

newaxis = None
mod = floormod

# Every op under TF's name (and the unmapped ones under their snake_case name), generated
# from the registry: tf.matmul, tf.reduce_mean, ...
globals().update({k: v for k, v in _ops.NAMESPACES[""].items() if k not in globals()})


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None):
    """tf.gradients: d(sum(ys)) / d(xs); None where an x does not reach ys."""
    single = not isinstance(xs, (list, tuple))
    ys = [convert_to_tensor(y) for y in (ys if isinstance(ys, (list, tuple)) else [ys])]
    xs = [convert_to_tensor(x) for x in (xs if not single else [xs])]
    grad_ys = [] if grad_ys is None else [convert_to_tensor(g) for g in
                                          (grad_ys if isinstance(grad_ys, (list, tuple)) else [grad_ys])]
    graph = ys[0].graph
    # The C++ walk puts its ops under "<name scope>/gradients".
    outs = _loom.gradients(graph._g, graph.get_name_scope(), [y._out for y in ys],
                           [x._out for x in xs], [g._out for g in grad_ys])
    return [None if o is None else graph._tensor(o) for o in outs]


def identity(input, name=None):  # noqa: A002
    return _ops.NAMESPACES[""]["identity"](input, name=name)


def no_op(name=None):
    return _ops.raw_ops.NoOp(name=name or "NoOp")


def executing_eagerly():
    return False


def disable_eager_execution():
    """Loom is graph-only, as TF1 is."""


def disable_v2_behavior():
    """Loom is TF1-shaped already."""


from loom.compat.v1 import nn  # noqa: E402
from loom.compat.v1 import train  # noqa: E402
from loom.compat.v1 import data  # noqa: E402
from loom.compat.v1 import summary  # noqa: E402
from loom.compat.v1 import estimator  # noqa: E402
from loom.compat.v1 import layers  # noqa: E402
from loom.compat.v1 import losses  # noqa: E402
from loom.compat.v1 import metrics  # noqa: E402
from loom.compat.v1 import feature_column  # noqa: E402
from loom.compat.v1 import regularizers as _regularizers  # noqa: E402
from loom.compat.v1.parsing import (FixedLenFeature, VarLenFeature, parse_example,  # noqa: E402
                                    parse_single_example)
from loom.compat.v1 import sparse  # noqa: E402
from loom.compat.v1.sparse import SparseTensor, SparseTensorValue  # noqa: E402

sparse_placeholder = sparse.placeholder
sparse_tensor_to_dense = sparse.to_dense
sparse_to_dense = sparse.sparse_to_dense
sparse_reorder = sparse.reorder
sparse_reduce_sum = sparse.reduce_sum
sparse.SparseTensorValue = SparseTensorValue

import types as _types  # noqa: E402

math = _types.ModuleType("loom.compat.v1.math", "tf.math")
math.__dict__.update(_ops.NAMESPACES["math"])
math.floormod = math.mod = floormod
math.floordiv = floordiv
math.top_k = nn.top_k
math.__dict__.update(reduce_logsumexp=reduce_logsumexp, count_nonzero=count_nonzero,
                     reduce_variance=_math_ops.reduce_variance,
                     reduce_std=_math_ops.reduce_std, log_sigmoid=log_sigmoid,
                     segment_sum=segment_sum, unsorted_segment_mean=unsorted_segment_mean,
                     bincount=bincount, is_nan=is_nan, is_inf=is_inf, is_finite=is_finite,
                     divide_no_nan=divide_no_nan, multiply_no_nan=_elementwise.multiply_no_nan,
                     xlogy=xlogy, xdivy=xdivy, reciprocal_no_nan=reciprocal_no_nan,
                     logical_xor=logical_xor, softsign=_elementwise.softsign, rint=rint,
                     polyval=polyval, reduce_euclidean_norm=_elementwise.reduce_euclidean_norm,
                     squared_difference=squared_difference, softplus=nn.softplus,
                     l2_normalize=nn.l2_normalize)
linalg = _types.ModuleType("loom.compat.v1.linalg", "tf.linalg")
linalg.__dict__.update(_ops.NAMESPACES["linalg"])
linalg.einsum = einsum
linalg.__dict__.update(norm=norm, tensordot=tensordot, eye=eye, diag_part=matrix_diag_part,
                       trace=trace, matrix_transpose=matrix_transpose,
                       transpose=matrix_transpose, diag=matrix_diag, band_part=matrix_band_part)
random = _types.ModuleType("loom.compat.v1.random", "tf.random")
random.__dict__.update(_ops.NAMESPACES["random"])
random.set_random_seed = set_random_seed
initializers = _types.ModuleType("loom.compat.v1.initializers", "tf.initializers")
initializers.__dict__.update(
    zeros=zeros_initializer, ones=ones_initializer, constant=constant_initializer,
    random_normal=random_normal_initializer, truncated_normal=truncated_normal_initializer,
    random_uniform=random_uniform_initializer, glorot_uniform=glorot_uniform_initializer,
    glorot_normal=glorot_normal_initializer, variance_scaling=variance_scaling_initializer,
    global_variables=global_variables_initializer, local_variables=local_variables_initializer,
    variables=variables_initializer)


io = _types.ModuleType("loom.compat.v1.io", "tf.io")
io.__dict__.update(parse_example=parse_example, parse_single_example=parse_single_example,
                   FixedLenFeature=FixedLenFeature, VarLenFeature=VarLenFeature)

# tf.contrib: the parts TF1 Estimator programs use (regularizers, smart_cond).
contrib = _types.ModuleType("loom.compat.v1.contrib", "tf.contrib")
contrib.layers = _types.ModuleType("loom.compat.v1.contrib.layers", "tf.contrib.layers")
contrib.layers.__dict__.update(
    l1_regularizer=_regularizers.l1_regularizer, l2_regularizer=_regularizers.l2_regularizer,
    l1_l2_regularizer=_regularizers.l1_l2_regularizer,
    sum_regularizer=_regularizers.sum_regularizer,
    apply_regularization=_regularizers.apply_regularization)
contrib.framework = _types.ModuleType("loom.compat.v1.contrib.framework",
                                      "tf.contrib.framework")
from loom.compat.v1.control_flow import smart_cond as _smart_cond  # noqa: E402
from loom.compat.v1.control_flow import while_loop  # noqa: E402,F401
from loom.compat.v1._while_loop import map_fn, scan, foldl, foldr  # noqa: E402,F401
from loom.compat.v1.control_flow import case, cond, switch_case  # noqa: E402,F401
from loom.compat.v1._tensor_array import TensorArray  # noqa: E402,F401

contrib.framework.smart_cond = _smart_cond
contrib.predictor = _types.ModuleType("loom.compat.v1.contrib.predictor",
                                      "tf.contrib.predictor")
contrib.predictor.from_saved_model = estimator.from_saved_model

# tf.keras: tf.keras.regularizers and tf.keras.constraints, as tf.layers arguments, and the
# convolution layers tf.layers lacks (layers.py: variables named as Keras names them outside
# name scopes).
keras = _types.ModuleType("loom.compat.v1.keras", "tf.keras")
keras.layers = _types.ModuleType("loom.compat.v1.keras.layers", "tf.keras.layers")
keras.layers.__dict__.update(
    DepthwiseConv2D=layers.DepthwiseConv2D, SeparableConv2D=layers.SeparableConv2D,
    SeparableConvolution2D=layers.SeparableConv2D, Conv2DTranspose=layers.Conv2DTranspose,
    Convolution2DTranspose=layers.Conv2DTranspose)
from loom.compat.v1 import _unsupported  # noqa: E402

_AS_TF_LAYERS = {"Dense": "Dense", "Conv2D": "Conv2D", "MaxPooling2D": "MaxPooling2D",
                 "MaxPool2D": "MaxPooling2D", "AveragePooling2D": "AveragePooling2D",
                 "AvgPool2D": "AveragePooling2D", "Flatten": "Flatten", "Dropout": "Dropout",
                 "BatchNormalization": "BatchNormalization"}
keras.layers.__getattr__ = _unsupported.missing(
    "tf.keras.layers",
    {name: "use tf.layers.%s, the same TF1 layer%s" % (
        ours, " (its kernel_initializer=None is the variable scope's, else glorot_uniform)"
        if ours in ("Dense", "Conv2D") else "") for name, ours in _AS_TF_LAYERS.items()})
_KERAS_MODELS = ("build the model in an Estimator model_fn with tf.layers; Keras models, "
                 "optimizers and training loops are not in Loom")
keras.__getattr__ = _unsupported.missing(
    "tf.keras", {name: _KERAS_MODELS for name in (
        "Model", "Sequential", "models", "Input", "optimizers", "losses", "metrics", "backend",
        "callbacks", "estimator", "utils", "initializers", "activations", "datasets")})
keras.regularizers = _types.ModuleType("loom.compat.v1.keras.regularizers",
                                       "tf.keras.regularizers")
from loom.compat.v1 import _constraints  # noqa: E402

keras.constraints = _types.ModuleType("loom.compat.v1.keras.constraints", "tf.keras.constraints")
keras.constraints.__dict__.update(
    {k: getattr(_constraints, k) for k in ("Constraint", "MaxNorm", "NonNeg", "UnitNorm",
                                          "MinMaxNorm", "max_norm", "non_neg", "unit_norm",
                                          "min_max_norm")})
keras.regularizers.__dict__.update(
    Regularizer=_regularizers.Regularizer, L1L2=_regularizers.L1L2, l1=_regularizers.keras_l1,
    l2=_regularizers.keras_l2, l1_l2=_regularizers.keras_l1_l2)


# tf.app.run(main=None, argv=None): runs __main__.main(argv) and exits with its result.
app = _types.ModuleType("loom.compat.v1.app", "tf.app")


def _app_run(main=None, argv=None):
    import sys
    main = main or sys.modules["__main__"].main
    sys.exit(main(list(sys.argv) if argv is None else argv))


app.run = _app_run

# TF1 names Loom lacks: using one is an UnsupportedAPIError naming it (_unsupported.py).
from loom.compat.v1 import _unsupported  # noqa: E402

_NO_EAGER = ("tf.py_function passes eager tensors, which Loom (graph-only) lacks; use tf.py_func "
             "or tf.numpy_function, which pass numpy arrays")
_RECORDS = ("from Python Loom parses tf.train.Example records with tf.parse_example / "
            "tf.parse_single_example (FixedLenFeature, VarLenFeature) and reads them with "
            "tf.data.TFRecordDataset; other record formats and ops are C++ only "
            "(loom::data::ParseExamples, CsvDataset, docs/data.md)")
_MISSING = {
    "py_function": _NO_EAGER,
    "Print": "no Print op; fetch the tensor, or log it with tf.train.LoggingTensorHook",
    "print": "no print op; fetch the tensor, or log it with tf.train.LoggingTensorHook",
    "Assert": "no assertion ops", "assert_equal": "no assertion ops",
    "debugging": "no assertion ops",
    "python_io": _RECORDS,
    "FixedLenSequenceFeature": _RECORDS, "decode_raw": _RECORDS, "decode_csv": _RECORDS,
    "read_file": _RECORDS,
    "device": "Loom runs on the CPU and places no ops on devices; remove the tf.device block",
    "enable_eager_execution": "Loom is graph-only, as TF1 is by default",
    "image": "no image ops", "strings": "no string ops", "string_split": "no string ops",
    "saved_model": "use Estimator.export_saved_model",
    "lookup": "no lookup tables; use tf.feature_column vocabulary columns",
    "tables_initializer": "no lookup tables; use tf.feature_column vocabulary columns",
    "distribute": "no distribution strategies from Python (the C++ API trains over MPI)",
}
__getattr__ = _unsupported.missing("tf", _MISSING)

# tf.compat.v1 is this module, as in TF 1.15 (programs spell tf.compat.v1.py_func,
# tf.compat.v1.Session, ... beside the plain names).
import sys as _sys  # noqa: E402

compat = _types.ModuleType("loom.compat.v1.compat", "tf.compat")
compat.v1 = _sys.modules[__name__]
