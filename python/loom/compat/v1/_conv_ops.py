"""TF 1.15's convolutions beyond tf.nn.conv2d: depthwise_conv2d_native (the op
DepthwiseConv2dNative, loom/ops/nn_depthwise.h), depthwise_conv2d and separable_conv2d
(TF's compositions: a depthwise convolution, then a 1x1 conv2d that mixes the channels),
conv2d_transpose (the op Conv2DTranspose, loom/ops/nn_conv_transpose.h). NHWC only.
docs/python_core.md lists them."""
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops


def _nn():
    return _ops.NAMESPACES["nn"]


def _strides4(strides, what):
    """TF's 4-entry NHWC strides [1, sh, sw, 1] as a list of ints."""
    s = [int(v) for v in _ops._ints(strides, None)]
    if len(s) != 4 or s[0] != 1 or s[3] != 1:
        raise ValueError("%s: strides must be [1, stride_height, stride_width, 1], got %r"
                         % (what, strides))
    return s


def _padding(padding, what):
    p = str(padding).upper()
    if p not in ("SAME", "VALID"):
        raise ValueError("%s: padding must be 'SAME' or 'VALID', got %r" % (what, padding))
    return p


def _nhwc(data_format, what):
    if data_format not in (None, "NHWC"):
        raise ValueError("Loom's %s takes data_format='NHWC' only, got %r; transpose the "
                         "input to channels-last first" % (what, data_format))


def _rate_pair(rate, dilations, what):
    """rate (TF1's name) or dilations as (rate_h, rate_w); 1 when neither is given."""
    if rate is not None and dilations is not None:
        raise ValueError("%s: give rate or dilations, not both" % what)
    r = rate if rate is not None else dilations
    if r is None:
        return (1, 1)
    r = [int(v) for v in _ops._ints(r, None)] if not isinstance(r, int) else [r]
    if len(r) == 1:
        r = r * 2
    if len(r) == 4 and r[0] == r[3] == 1:
        r = r[1:3]
    if len(r) != 2 or min(r) < 1:
        raise ValueError("%s: rate must be a positive int or [rate_height, rate_width], got %r"
                         % (what, rate if rate is not None else dilations))
    return tuple(r)


def _atrous(what, rate):
    if rate != (1, 1):
        raise NotImplementedError(
            "%s with rate %r > 1 (atrous) is not supported by Loom yet; dilate the filter "
            "with zeros (tf.pad between its taps) and use rate 1" % (what, rate))


def depthwise_conv2d_native(input, filter, strides, padding,  # noqa: A002
                            data_format="NHWC", dilations=None, name=None):
    """tf.nn.depthwise_conv2d_native: input [batch, h, w, C], filter [kh, kw, C, M] ->
    [batch, out_h, out_w, C * M], output channel c * M + m from input channel c and filter
    [:, :, c, m]."""
    _nhwc(data_format, "depthwise_conv2d_native")
    _atrous("tf.nn.depthwise_conv2d_native", _rate_pair(None, dilations,
                                                        "depthwise_conv2d_native"))
    return _ops.apply_op(
        "DepthwiseConv2dNative", [input, filter],
        {"strides": _strides4(strides, "depthwise_conv2d_native"),
         "padding": _padding(padding, "depthwise_conv2d_native")},
        name=name or "DepthwiseConv2dNative", same_dtype=True)


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """tf.nn.depthwise_conv2d: depthwise_conv2d_native under the name scope 'depthwise'."""
    _nhwc(data_format, "depthwise_conv2d")
    r = _rate_pair(rate, dilations, "depthwise_conv2d")
    _atrous("tf.nn.depthwise_conv2d", r)
    with _fw.get_default_graph().name_scope(name or "depthwise"):
        return depthwise_conv2d_native(input, filter, strides, padding, name="depthwise")


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """tf.nn.separable_conv2d: output[b, i, j, k] = sum_{di, dj, q, r} input[b, strides[1] * i
    + di, strides[2] * j + dj, q] * depthwise_filter[di, dj, q, r] * pointwise_filter[0, 0,
    q * M + r, k]: the depthwise convolution (strides, padding), then a VALID 1x1 conv2d by
    pointwise_filter [1, 1, C * M, out_channels], as TF 1.15 builds it."""
    _nhwc(data_format, "separable_conv2d")
    r = _rate_pair(rate, dilations, "separable_conv2d")
    _atrous("tf.nn.separable_conv2d", r)
    with _fw.get_default_graph().name_scope(name or "separable_conv2d"):
        x = _fw.convert_to_tensor(input)
        depthwise_filter = _fw.convert_to_tensor(depthwise_filter, dtype=x.dtype)
        pointwise_filter = _fw.convert_to_tensor(pointwise_filter, dtype=x.dtype)
        dw, pw = depthwise_filter.shape.dims, pointwise_filter.shape.dims
        if dw is not None and len(dw) != 4:
            raise ValueError("separable_conv2d: depthwise_filter must be 4-D [height, width, "
                             "in_channels, channel_multiplier], got shape %s"
                             % depthwise_filter.shape)
        if pw is not None and (len(pw) != 4 or pw[0] not in (None, 1) or
                               pw[1] not in (None, 1)):
            raise ValueError("separable_conv2d: pointwise_filter must be [1, 1, in_channels * "
                             "channel_multiplier, out_channels], got shape %s"
                             % pointwise_filter.shape)
        depthwise = depthwise_conv2d_native(x, depthwise_filter, strides, padding,
                                            name="depthwise")
        return _nn()["conv2d"](depthwise, pointwise_filter, strides=[1, 1, 1, 1],
                               padding="VALID")


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """tf.nn.conv2d_transpose: value [batch, h, w, in_channels], filter [height, width,
    output_channels, in_channels], output_shape [batch, H, W, output_channels] (a list, or
    a tensor computed at run time): the gradient of conv2d with respect to its input (TF's
    Conv2DBackpropInput), differentiable in value and filter."""
    value = value if value is not None else input
    filter = filter if filter is not None else filters  # noqa: A001
    if value is None or filter is None or output_shape is None or strides is None:
        raise ValueError("conv2d_transpose needs value (or input), filter (or filters), "
                         "output_shape and strides")
    _nhwc(data_format, "conv2d_transpose")
    _atrous("tf.nn.conv2d_transpose", _rate_pair(None, dilations, "conv2d_transpose"))
    with _fw.get_default_graph().name_scope(name or "conv2d_transpose"):
        value = _fw.convert_to_tensor(value)
        filter = _fw.convert_to_tensor(filter, dtype=value.dtype)  # noqa: A001
        v, f = value.shape.dims, filter.shape.dims
        if v is not None and f is not None and len(v) == 4 and len(f) == 4 and \
                None not in (v[3], f[3]) and v[3] != f[3]:
            raise ValueError("conv2d_transpose: value has %d channels (shape %s) but the "
                             "filter's in_channels (dim 3) is %d (shape %s)"
                             % (v[3], value.shape, f[3], filter.shape))
        shape = output_shape if isinstance(output_shape, _fw.Tensor) else \
            _fw.convert_to_tensor(output_shape)
        static = _ops.constant_value(shape)
        if static is not None and f is not None and len(f) == 4 and f[2] is not None and \
                len(static) == 4 and int(static[3]) != f[2]:
            raise ValueError("conv2d_transpose: output_shape %s has %d channels but the "
                             "filter's output_channels (dim 2) is %d (shape %s)"
                             % (list(static), int(static[3]), f[2], filter.shape))
        return _ops.apply_op(
            "Conv2DTranspose", [value, filter, shape],
            {"strides": _strides4(strides, "conv2d_transpose"),
             "padding": _padding(padding, "conv2d_transpose")},
            name="conv2d_transpose")
