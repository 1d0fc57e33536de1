"""TF 1.15's convolutions beyond tf.nn.conv2d: depthwise_conv2d_native (the op
DepthwiseConv2dNative, loom/ops/nn_depthwise.h), depthwise_conv2d and separable_conv2d
(TF's compositions: a depthwise convolution, then a 1x1 conv2d that mixes the channels),
conv2d_transpose (the op Conv2DTranspose, loom/ops/nn_conv_transpose.h), atrous_conv2d and
the dilations / rate of conv2d, depthwise_conv2d and separable_conv2d (TF 1.15's lowering:
SpaceToBatchND, a VALID convolution, BatchToSpaceND; loom/ops/space_batch.h). NHWC only.
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


def _with_space_to_batch(x, filter_hw, rate, padding, op, what):
    """TF 1.15's with_space_to_batch for a rate (dilation) > 1: SpaceToBatchND by the rate
    (padded by the dilated filter's SAME padding, plus what makes each dim a multiple of the
    rate), `op` with VALID padding, then BatchToSpaceND cropping that extra off again. The
    spatial dims must be known (the paddings are attributes)."""
    x = _fw.convert_to_tensor(x)
    dims = x.shape.dims
    if dims is None or len(dims) != 4 or None in dims[1:3]:
        raise NotImplementedError("%s with rate %r needs an NHWC input whose height and width "
                                  "are known; got shape %s" % (what, rate, x.shape))
    if None in filter_hw:
        raise NotImplementedError("%s with rate %r needs the filter's height and width known"
                                  % (what, rate))
    paddings, crops = [], []
    for size, k, r in zip(dims[1:3], filter_hw, rate):
        extra = (k - 1) * r if padding == "SAME" else 0
        start, end = extra // 2, extra - extra // 2
        end_extra = (r - (size + start + end) % r) % r
        paddings += [start, end + end_extra]
        crops += [0, end_extra]
    converted = _ops.apply_op("SpaceToBatchND", [x],
                              {"block_shape": list(rate), "paddings": paddings})
    return _ops.apply_op("BatchToSpaceND", [op(converted, "VALID")],
                         {"block_shape": list(rate), "crops": crops})


def _dilated(x, filter, rate, strides, padding, op, what):  # noqa: A002
    """op(x, padding) directly at rate 1, through _with_space_to_batch above it (where TF
    requires strides of 1)."""
    if rate == (1, 1):
        return op(x, padding)
    if any(int(v) != 1 for v in strides):
        raise ValueError("%s: strides > 1 are not supported in conjunction with rate / "
                         "dilations > 1 (got strides %r, rate %r), as in TF" % (what, strides, rate))
    f = _fw.convert_to_tensor(filter).shape.dims
    return _with_space_to_batch(x, (f[0], f[1]) if f is not None else (None, None), rate,
                                padding, op, what)


def _plain_conv2d():
    return _ops.NAMESPACES["nn"]["conv2d"]


def conv2d(input=None, filter=None, strides=None, padding=None,  # noqa: A002
           use_cudnn_on_gpu=True, data_format="NHWC", dilations=None, name=None, filters=None):
    """tf.nn.conv2d; dilations [1, rh, rw, 1] > 1 lower as TF 1.15's atrous convolution
    (SpaceToBatchND, a VALID conv2d, BatchToSpaceND), with strides of 1."""
    filter = filter if filter is not None else filters  # noqa: A001
    rate = _rate_pair(None, dilations, "conv2d")
    if rate == (1, 1):
        return _plain_conv2d()(input, filter, strides=strides, padding=padding,
                               data_format=data_format, name=name)
    _nhwc(data_format, "conv2d")
    p = _padding(padding, "conv2d")
    s = _strides4(strides, "conv2d")
    with _fw.get_default_graph().name_scope(name or "Conv2D"):
        return _dilated(input, filter, rate, s, p,
                        lambda x, pad: _plain_conv2d()(x, filter, strides=[1, 1, 1, 1],
                                                       padding=pad), "conv2d")


def atrous_conv2d(value, filters, rate, padding, name=None):
    """tf.nn.atrous_conv2d: conv2d of value by filters dilated by `rate` (an int >= 1), at
    stride 1: TF 1.15's convolution(dilation_rate=[rate, rate])."""
    r = int(rate)
    if r < 1:
        raise ValueError("atrous_conv2d: rate must be a positive int, got %r" % (rate,))
    p = _padding(padding, "atrous_conv2d")
    with _fw.get_default_graph().name_scope(name or "convolution"):
        return _dilated(value, filters, (r, r), [1, 1, 1, 1], p,
                        lambda x, pad: _plain_conv2d()(x, filters, strides=[1, 1, 1, 1],
                                                       padding=pad), "atrous_conv2d")


def depthwise_conv2d_native(input, filter, strides, padding,  # noqa: A002
                            data_format="NHWC", dilations=None, name=None):
    """tf.nn.depthwise_conv2d_native: input [batch, h, w, C], filter [kh, kw, C, M] ->
    [batch, out_h, out_w, C * M], output channel c * M + m from input channel c and filter
    [:, :, c, m]; dilations [1, rh, rw, 1] dilate the filter (the op's attribute, as TF's)."""
    _nhwc(data_format, "depthwise_conv2d_native")
    rate = _rate_pair(None, dilations, "depthwise_conv2d_native")
    return _ops.apply_op(
        "DepthwiseConv2dNative", [input, filter],
        {"strides": _strides4(strides, "depthwise_conv2d_native"),
         "padding": _padding(padding, "depthwise_conv2d_native"),
         "dilations": [1, rate[0], rate[1], 1]},
        name=name or "DepthwiseConv2dNative", same_dtype=True)


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """tf.nn.depthwise_conv2d: depthwise_conv2d_native under the name scope 'depthwise'."""
    _nhwc(data_format, "depthwise_conv2d")
    r = _rate_pair(rate, dilations, "depthwise_conv2d")
    s, p = _strides4(strides, "depthwise_conv2d"), _padding(padding, "depthwise_conv2d")
    with _fw.get_default_graph().name_scope(name or "depthwise"):
        return _dilated(input, filter, r, s, p,
                        lambda x, pad: depthwise_conv2d_native(x, filter, s, pad,
                                                               name="depthwise"),
                        "depthwise_conv2d")


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """tf.nn.separable_conv2d: output[b, i, j, k] = sum_{di, dj, q, r} input[b, strides[1] * i
    + di, strides[2] * j + dj, q] * depthwise_filter[di, dj, q, r] * pointwise_filter[0, 0,
    q * M + r, k]: the depthwise convolution (strides, padding), then a VALID 1x1 conv2d by
    pointwise_filter [1, 1, C * M, out_channels], as TF 1.15 builds it."""
    _nhwc(data_format, "separable_conv2d")
    r = _rate_pair(rate, dilations, "separable_conv2d")
    s, p = _strides4(strides, "separable_conv2d"), _padding(padding, "separable_conv2d")
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
        depthwise = _dilated(x, depthwise_filter, r, s, p,
                             lambda v, pad: depthwise_conv2d_native(v, depthwise_filter, s, pad,
                                                                    name="depthwise"),
                             "separable_conv2d")
        return _nn()["conv2d"](depthwise, pointwise_filter, strides=[1, 1, 1, 1],
                               padding="VALID")


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """tf.nn.conv2d_transpose: value [batch, h, w, in_channels], filter [height, width,
    output_channels, in_channels], output_shape [batch, H, W, output_channels] (a list, or
    a tensor computed at run time): the gradient of conv2d with respect to its input (TF's
    Conv2DBackpropInput), differentiable in value and filter; dilations [1, rh, rw, 1] (or
    an int) dilate that conv2d's filter."""
    value = value if value is not None else input
    filter = filter if filter is not None else filters  # noqa: A001
    if value is None or filter is None or output_shape is None or strides is None:
        raise ValueError("conv2d_transpose needs value (or input), filter (or filters), "
                         "output_shape and strides")
    _nhwc(data_format, "conv2d_transpose")
    rate = _rate_pair(None, dilations, "conv2d_transpose")
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
             "padding": _padding(padding, "conv2d_transpose"),
             "dilations": [1, rate[0], rate[1], 1]},
            name="conv2d_transpose")
