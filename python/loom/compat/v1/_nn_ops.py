"""TF 1.15's tf.nn functions that TF builds from other ops, built the same way here
(gradients by composition): batch_normalization, fused_batch_norm,
weighted_cross_entropy_with_logits, conv1d (a conv2d over a height of 1, as TF's) and
local_response_normalization; max_pool_with_argmax (the op MaxPoolWithArgmax).
docs/python_core.md lists them."""
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops
from loom.compat.v1 import dtypes as _dtypes


def _nn():
    return _ops.NAMESPACES["nn"]


def _ns():
    return _ops.NAMESPACES[""]


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, as TF 1.15 computes it:
    x * inv + (offset - mean * inv) with inv = rsqrt(variance + epsilon) * scale; offset and
    scale may be None."""
    ns = _ns()
    with _fw.get_default_graph().name_scope(name or "batchnorm"):
        x = _fw.convert_to_tensor(x)

        def like_x(v):  # Python numbers and arrays take x's dtype
            return v if v is None or isinstance(v, _fw.Tensor) else \
                _fw.constant(v, dtype=x.dtype)

        mean, variance, offset, scale = map(like_x, (mean, variance, offset, scale))
        inv = ns["rsqrt"](variance + variance_epsilon)
        if scale is not None:
            inv = inv * scale
        shift = (offset - mean * inv) if offset is not None else ns["negative"](mean * inv)
        return x * inv + shift


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """TF 1.15's stable form: (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-|x|)) +
    max(-x, 0)), z the labels (or TF1's `targets`), q = pos_weight."""
    ns = _ns()
    labels = labels if labels is not None else targets
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs labels (or targets), "
                         "logits and pos_weight")
    with _fw.get_default_graph().name_scope(name or "logistic_loss"):
        x = _fw.convert_to_tensor(logits)
        z = _fw.convert_to_tensor(labels, dtype=x.dtype)
        if not x.shape.is_compatible_with(z.shape):
            raise ValueError("logits and labels must have the same shape (%s vs %s)"
                             % (x.shape, z.shape))
        log_weight = 1 + (pos_weight - 1) * z
        softplus_neg = ns["log1p"](ns["exp"](ns["negative"](ns["abs"](x)))) + \
            _nn()["relu"](ns["negative"](x))
        return (1 - z) * x + log_weight * softplus_neg


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """tf.nn.conv1d over NWC input [batch, width, in] with filters [width, in, out]: TF's
    conv2d of [batch, 1, width, in] by [1, width, in, out], stride [1, 1, stride, 1]."""
    ns = _ns()
    value = value if value is not None else input
    if value is None or filters is None or stride is None or padding is None:
        raise ValueError("conv1d needs value (or input), filters, stride and padding")
    if data_format not in (None, "NWC", "NHWC"):
        raise ValueError("Loom's conv1d takes data_format='NWC' only, got %r" % (data_format,))
    if dilations not in (None, 1, [1], [1, 1, 1], (1,), (1, 1, 1)):
        raise ValueError("Loom's conv1d has no dilations; got %r" % (dilations,))
    if isinstance(stride, (list, tuple)):
        if len(stride) == 3 and stride[0] == stride[2] == 1:
            stride = stride[1]
        elif len(stride) == 1:
            stride = stride[0]
        else:
            raise ValueError("conv1d: stride must be an int or [1, s, 1], got %r" % (stride,))
    with _fw.get_default_graph().name_scope(name or "conv1d"):
        x = ns["expand_dims"](value, 1)
        f = ns["expand_dims"](filters, 0)
        y = _nn()["conv2d"](x, f, strides=[1, 1, int(stride), 1], padding=padding)
        return ns["squeeze"](y, [1])


def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5,  # noqa: A002
                                 name=None):
    """tf.nn.lrn: x / (bias + alpha * sqr_sum) ** beta, sqr_sum the sum of x^2 over the
    channels within depth_radius of each channel (NHWC, static channel count): the
    channel axis zero-padded by the radius and 2 * radius + 1 shifted slices summed."""
    ns = _ns()
    with _fw.get_default_graph().name_scope(name or "LRN"):
        x = _fw.convert_to_tensor(input)
        dims = x.shape.as_list()
        if len(dims) != 4 or dims[3] is None:
            raise ValueError("tf.nn.lrn takes a 4-D NHWC input with a known channel count, "
                             "got %s" % x.shape)
        r, channels = int(depth_radius), dims[3]
        padded = ns["pad"](x * x, [[0, 0], [0, 0], [0, 0], [r, r]])
        window = [_ops._getitem(padded, (Ellipsis, slice(k, k + channels)))
                  for k in range(2 * r + 1)]
        sqr_sum = ns["add_n"](window) if len(window) > 1 else window[0]
        return x * ns["pow"](sqr_sum * float(alpha) + float(bias), -float(beta))


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None):
    """tf.nn.fused_batch_norm over NHWC channels: (y, batch mean, batch variance). With
    is_training the statistics are the batch's (y uses the biased variance, the returned one
    carries Bessel's correction n / (n - 1), as TF's kernel gives it for the moving
    average); otherwise `mean` and `variance` normalize and are returned. epsilon is at
    least 1.001e-5, as TF 1.15 makes it. Gradients by composition."""
    ns = _ns()
    if data_format not in (None, "NHWC"):
        raise ValueError("Loom's fused_batch_norm takes data_format='NHWC' only, got %r"
                         % (data_format,))
    epsilon = max(float(epsilon), 1.001e-5)
    with _fw.get_default_graph().name_scope(name or "FusedBatchNorm"):
        x = _fw.convert_to_tensor(x)
        if x.shape.ndims not in (None, 4):
            raise ValueError("fused_batch_norm takes a 4-D NHWC input, got %s" % x.shape)
        if not is_training:
            if mean is None or variance is None:
                raise ValueError("fused_batch_norm needs mean and variance when is_training "
                                 "is False")
            y = batch_normalization(x, mean, variance, offset, scale, epsilon)
            return y, _fw.convert_to_tensor(mean), _fw.convert_to_tensor(variance)
        batch_mean = ns["reduce_mean"](x, [0, 1, 2])
        batch_var = ns["reduce_mean"](ns["square"](x - batch_mean), [0, 1, 2])
        y = batch_normalization(x, batch_mean, batch_var, offset, scale, epsilon)
        n = ns["cast"](ns["size"](x), x.dtype) / ns["cast"](ns["size"](batch_mean), x.dtype)
        corrected = batch_var * (n / ns["maximum"](n - 1, 1))
        return y, batch_mean, corrected


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         Targmax=None, name=None, output_dtype=None,  # noqa: N803 (TF's name)
                         include_batch_in_index=False):
    """tf.nn.max_pool_with_argmax: (max_pool's values, argmax) with TF's flattened argmax,
    (y * width + x) * channels + c, or ((b * height + y) * width + x) * channels + c with
    include_batch_in_index; ties keep the first position. The op MaxPoolWithArgmax
    (loom/ops/nn_pool_argmax.h), differentiable through the values."""
    if data_format not in (None, "NHWC"):
        raise ValueError("Loom's max_pool_with_argmax takes data_format='NHWC' only, got %r"
                         % (data_format,))
    if Targmax is not None and output_dtype is not None and \
            _dtypes.as_dtype(Targmax) != _dtypes.as_dtype(output_dtype):
        raise ValueError("max_pool_with_argmax: Targmax and output_dtype differ (%s, %s)"
                         % (Targmax, output_dtype))
    targmax = _dtypes.as_dtype(Targmax or output_dtype or _dtypes.int64)

    def four(v, what):
        v = [int(x) for x in _ops._ints(v, None)] if not isinstance(v, int) else [v]
        if len(v) == 1:
            v = [1, v[0], v[0], 1]
        elif len(v) == 2:
            v = [1, v[0], v[1], 1]
        if len(v) != 4 or v[0] != 1 or v[3] != 1:
            raise ValueError("max_pool_with_argmax: %s must be [1, height, width, 1], got %r"
                             % (what, v))
        return v

    outputs = _ops.apply_op(
        "MaxPoolWithArgmax", [input],
        {"ksize": four(ksize, "ksize"), "strides": four(strides, "strides"),
         "padding": str(padding).upper(), "Targmax": targmax,
         "include_batch_in_index": bool(include_batch_in_index)},
        name=name or "MaxPoolWithArgmax")
    return tuple(outputs)
