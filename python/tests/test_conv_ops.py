"""TF 1.15's convolutions beyond conv2d (python/loom/compat/v1/_conv_ops.py):
depthwise_conv2d(_native), separable_conv2d. Values from TF's documented formulas (numpy
written out here, with TF's SAME padding) or by hand; gradients against central differences."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def _pad_same(x, kh, kw, sh, sw):
    """TF's SAME padding of an NHWC array: out = ceil(in / s), the extra row / column of an
    odd total at the bottom / right."""
    _, h, w, _ = x.shape
    ph = max((-(-h // sh) - 1) * sh + kh - h, 0)
    pw = max((-(-w // sw) - 1) * sw + kw - w, 0)
    return np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])


def _depthwise_reference(x, f, strides, padding):
    """TF's docstring: output[b, i, j, k * M + q] = sum_{di, dj} input[b, strides[1] * i + di,
    strides[2] * j + dj, k] * filter[di, dj, k, q] (after padding)."""
    kh, kw, c, m = f.shape
    sh, sw = strides[1], strides[2]
    if padding == "SAME":
        x = _pad_same(x, kh, kw, sh, sw)
    n, h, w, _ = x.shape
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    out = np.zeros((n, oh, ow, c * m))
    for i in range(oh):
        for j in range(ow):
            window = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]  # [n, kh, kw, c]
            out[:, i, j, :] = np.einsum("nhwc,hwcm->ncm", window, f).reshape(n, c * m)
    return out


def test_depthwise_conv2d_by_hand():
    # One channel 1..9, a 2x2 filter of ones with multiplier 2 (the second copy doubled):
    # each VALID output is a 2x2 window sum, then twice it.
    x = tf.constant(np.arange(1., 10.).reshape(1, 3, 3, 1), tf.float32)
    f = tf.constant(np.tile([1., 2.], 4).reshape(2, 2, 1, 2), tf.float32)
    y = tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "VALID")
    assert y.shape.as_list() == [1, 2, 2, 2]
    np.testing.assert_array_equal(_run(y)[0], [[[12, 24], [16, 32]], [[24, 48], [28, 56]]])


@pytest.mark.parametrize("strides,padding,m", [([1, 1, 1, 1], "SAME", 1),
                                               ([1, 2, 2, 1], "SAME", 2),
                                               ([1, 2, 1, 1], "VALID", 3)])
def test_depthwise_conv2d_matches_tfs_formula(strides, padding, m):
    rng = np.random.RandomState(3)
    x0 = rng.uniform(-1, 1, (2, 5, 6, 3))
    f0 = rng.uniform(-1, 1, (3, 2, 3, m))
    y = tf.nn.depthwise_conv2d(tf.constant(x0), tf.constant(f0), strides, padding)
    want = _depthwise_reference(x0, f0, strides, padding)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(_run(y), want, rtol=1e-12, atol=1e-12)
    native = tf.nn.depthwise_conv2d_native(tf.constant(x0, tf.float32),
                                           tf.constant(f0, tf.float32), strides, padding)
    assert native.op.type == "DepthwiseConv2dNative"
    np.testing.assert_allclose(_run(native), want, rtol=1e-5, atol=1e-5)


def test_depthwise_conv2d_gradients(numeric_gradient):
    rng = np.random.RandomState(5)
    x0 = rng.uniform(-1, 1, (1, 4, 5, 2))
    f0 = rng.uniform(-1, 1, (3, 3, 2, 2))
    x = tf.placeholder(tf.float64, x0.shape)
    f = tf.placeholder(tf.float64, f0.shape)
    w = tf.constant(rng.uniform(-1, 1, (1, 2, 3, 4)))  # a weighting, so every output counts
    loss = tf.reduce_sum(tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME") * w)
    dx, df = tf.gradients(loss, [x, f])
    with tf.Session() as sess:
        got_dx, got_df = sess.run([dx, df], {x: x0, f: f0})
        want_dx = numeric_gradient(sess, tf.reduce_sum(
            tf.nn.depthwise_conv2d(x, tf.constant(f0), [1, 2, 2, 1], "SAME") * w), x, x0)
        want_df = numeric_gradient(sess, tf.reduce_sum(
            tf.nn.depthwise_conv2d(tf.constant(x0), f, [1, 2, 2, 1], "SAME") * w), f, f0)
    np.testing.assert_allclose(got_dx, want_dx, atol=1e-7)
    np.testing.assert_allclose(got_df, want_df, atol=1e-7)


def test_separable_conv2d_matches_tfs_formula(numeric_gradient):
    rng = np.random.RandomState(7)
    x0 = rng.uniform(-1, 1, (2, 6, 5, 3))
    dw0 = rng.uniform(-1, 1, (3, 3, 3, 2))
    pw0 = rng.uniform(-1, 1, (1, 1, 6, 4))
    x = tf.placeholder(tf.float64, x0.shape)
    y = tf.nn.separable_conv2d(x, tf.constant(dw0), tf.constant(pw0), [1, 2, 2, 1], "SAME")
    # output[b, i, j, k] = sum_{q, r} depthwise[b, i, j, q * M + r] * pointwise[0, 0, q*M+r, k]
    want = np.einsum("nhwc,ck->nhwk", _depthwise_reference(x0, dw0, [1, 2, 2, 1], "SAME"),
                     pw0[0, 0])
    assert y.shape.as_list() == [2, 3, 3, 4]
    loss = tf.reduce_sum(y * y)
    (dx,) = tf.gradients(loss, x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: x0}), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(sess.run(dx, {x: x0}), numeric_gradient(sess, loss, x, x0),
                                   atol=1e-6)


def test_bad_arguments_are_clear_errors():
    x = tf.zeros([1, 4, 4, 2])
    f = tf.zeros([2, 2, 2, 1])
    with pytest.raises(ValueError, match="NHWC"):
        tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", data_format="NCHW")
    with pytest.raises(ValueError, match=r"strides must be \[1, stride_height"):
        tf.nn.depthwise_conv2d(x, f, [2, 2], "SAME")
    with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'"):
        tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "FULL")
    with pytest.raises(tf.errors.InvalidArgumentError, match="in_channels 3"):
        tf.nn.depthwise_conv2d(x, tf.zeros([2, 2, 3, 1]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="pointwise_filter must be"):
        tf.nn.separable_conv2d(x, f, tf.zeros([2, 2, 2, 4]), [1, 1, 1, 1], "SAME")


def _transpose_reference(v, f, out_shape, strides, padding):
    """conv2d_transpose by its definition, the adjoint of conv2d: each value element
    spreads value * filter over the window of the output it would be computed from (TF's
    SAME padding of the conv2d from out_shape, whose leading pad is cut off again)."""
    n, h, w, c = out_shape
    kh, kw = f.shape[:2]
    sh, sw = strides[1], strides[2]
    pt = pl = 0
    if padding == "SAME":
        pt = max((v.shape[1] - 1) * sh + kh - h, 0) // 2
        pl = max((v.shape[2] - 1) * sw + kw - w, 0) // 2
    big = np.zeros((n, h + kh + sh * v.shape[1], w + kw + sw * v.shape[2], c))
    for i in range(v.shape[1]):
        for j in range(v.shape[2]):
            big[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :] += \
                np.einsum("nk,hwck->nhwc", v[:, i, j, :], f)
    return big[:, pt:pt + h, pl:pl + w, :]


def test_conv2d_transpose_by_hand():
    # Stride 2, a 2x2 filter of ones: each value fills its own 2x2 block.
    v = tf.constant([[[[1.], [2.]], [[3.], [4.]]]])
    y = tf.nn.conv2d_transpose(v, tf.ones([2, 2, 1, 1]), [1, 4, 4, 1], [1, 2, 2, 1], "SAME")
    assert y.shape.as_list() == [1, 4, 4, 1]
    np.testing.assert_array_equal(_run(y)[0, :, :, 0], [[1, 1, 2, 2], [1, 1, 2, 2],
                                                        [3, 3, 4, 4], [3, 3, 4, 4]])


@pytest.mark.parametrize("out_shape,strides,padding", [((2, 7, 6, 3), [1, 2, 2, 1], "SAME"),
                                                       ((1, 8, 5, 2), [1, 3, 2, 1], "VALID"),
                                                       ((2, 4, 4, 3), [1, 1, 1, 1], "SAME")])
def test_conv2d_transpose_matches_its_definition(out_shape, strides, padding, numeric_gradient):
    rng = np.random.RandomState(11)
    f0 = rng.uniform(-1, 1, (3, 3, out_shape[3], 4))
    conv = tf.nn.conv2d(tf.zeros(out_shape, tf.float64), tf.constant(f0), strides, padding)
    v0 = rng.uniform(-1, 1, conv.shape.as_list())
    v = tf.placeholder(tf.float64, v0.shape)
    f = tf.placeholder(tf.float64, f0.shape)
    y = tf.nn.conv2d_transpose(v, f, list(out_shape), strides, padding)
    assert y.shape.as_list() == list(out_shape)
    want = _transpose_reference(v0, f0, out_shape, strides, padding)
    w = tf.constant(rng.uniform(-1, 1, out_shape))
    loss = tf.reduce_sum(y * w)
    dv, df = tf.gradients(loss, [v, f])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {v: v0, f: f0}), want, atol=1e-12)
        got_dv, got_df = sess.run([dv, df], {v: v0, f: f0})
        loss_v = tf.reduce_sum(tf.nn.conv2d_transpose(v, tf.constant(f0), list(out_shape),
                                                      strides, padding) * w)
        loss_f = tf.reduce_sum(tf.nn.conv2d_transpose(tf.constant(v0), f, list(out_shape),
                                                      strides, padding) * w)
        np.testing.assert_allclose(got_dv, numeric_gradient(sess, loss_v, v, v0), atol=1e-7)
        np.testing.assert_allclose(got_df, numeric_gradient(sess, loss_f, f, f0), atol=1e-7)


def test_conv2d_transpose_output_shape_at_run_time():
    # The usual TF1 decoder: the batch size from tf.shape of the input.
    x = tf.placeholder(tf.float32, [None, 3, 3, 4])
    f = tf.ones([2, 2, 2, 4])
    y = tf.nn.conv2d_transpose(x, f, tf.stack([tf.shape(x)[0], 6, 6, 2]), [1, 2, 2, 1])
    assert y.shape.as_list()[3] == 2
    out = _run(y, {x: np.ones((5, 3, 3, 4), np.float32)})
    # Each output pixel is reached by one value (its 4 channels) through one filter tap.
    np.testing.assert_array_equal(out, np.full((5, 6, 6, 2), 4.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"does not fit value \[5,3,3,4\]"):
        _run(tf.nn.conv2d_transpose(x, f, tf.stack([tf.shape(x)[0], 9, 6, 2]), [1, 2, 2, 1]),
             {x: np.ones((5, 3, 3, 4), np.float32)})


def test_conv2d_transpose_bad_arguments():
    v = tf.zeros([1, 2, 2, 3])
    with pytest.raises(ValueError, match="value has 3 channels"):
        tf.nn.conv2d_transpose(v, tf.zeros([2, 2, 1, 4]), [1, 4, 4, 1], [1, 2, 2, 1])
    with pytest.raises(ValueError, match=r"output_shape \[1, 4, 4, 2\] has 2 channels"):
        tf.nn.conv2d_transpose(v, tf.zeros([2, 2, 1, 3]), [1, 4, 4, 2], [1, 2, 2, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit value"):
        tf.nn.conv2d_transpose(v, tf.zeros([2, 2, 1, 3]), [1, 9, 4, 1], [1, 2, 2, 1])


def _dilated_reference(x, f, rate, padding, depthwise=False):
    """A convolution by filter f dilated by `rate` (taps `rate` apart), stride 1, TF's SAME
    padding of the dilated filter size (k - 1) * rate + 1; by its definition."""
    kh, kw = f.shape[:2]
    eh, ew = (kh - 1) * rate + 1, (kw - 1) * rate + 1
    if padding == "SAME":
        th, tw = eh - 1, ew - 1
        x = np.pad(x, [(0, 0), (th // 2, th - th // 2), (tw // 2, tw - tw // 2), (0, 0)])
    n, h, w, _ = x.shape
    oh, ow = h - eh + 1, w - ew + 1
    out = 0
    for di in range(kh):
        for dj in range(kw):
            window = x[:, di * rate:di * rate + oh, dj * rate:dj * rate + ow, :]
            if depthwise:
                out = out + (window[..., None] * f[di, dj]).reshape(n, oh, ow, -1)
            else:
                out = out + np.einsum("nhwc,co->nhwo", window, f[di, dj])
    return out


@pytest.mark.parametrize("rate,padding,size", [(2, "SAME", (7, 6)), (3, "VALID", (9, 8)),
                                               (2, "VALID", (8, 7))])
def test_atrous_conv2d_matches_a_dilated_convolution(rate, padding, size, numeric_gradient):
    rng = np.random.RandomState(13)
    x0 = rng.uniform(-1, 1, (2,) + size + (3,))
    f0 = rng.uniform(-1, 1, (3, 2, 3, 4))
    x = tf.placeholder(tf.float64, x0.shape)
    y = tf.nn.atrous_conv2d(x, tf.constant(f0), rate, padding)
    want = _dilated_reference(x0, f0, rate, padding)
    assert y.shape.as_list() == list(want.shape)
    same = tf.nn.conv2d(x, tf.constant(f0), [1, 1, 1, 1], padding,
                        dilations=[1, rate, rate, 1])
    loss = tf.reduce_sum(y * y)
    (dx,) = tf.gradients(loss, x)
    with tf.Session() as sess:
        got, via_conv2d = sess.run([y, same], {x: x0})
        np.testing.assert_allclose(got, want, atol=1e-12)
        np.testing.assert_allclose(via_conv2d, want, atol=1e-12)
        np.testing.assert_allclose(sess.run(dx, {x: x0}), numeric_gradient(sess, loss, x, x0),
                                   atol=1e-6)


def test_depthwise_and_separable_rate():
    rng = np.random.RandomState(17)
    x0 = rng.uniform(-1, 1, (1, 7, 7, 2))
    f0 = rng.uniform(-1, 1, (3, 3, 2, 2))
    pw0 = rng.uniform(-1, 1, (1, 1, 4, 3))
    dw = tf.nn.depthwise_conv2d(tf.constant(x0), tf.constant(f0), [1, 1, 1, 1], "SAME",
                                rate=[2, 2])
    sep = tf.nn.separable_conv2d(tf.constant(x0), tf.constant(f0), tf.constant(pw0),
                                 [1, 1, 1, 1], "SAME", rate=2)
    want = _dilated_reference(x0, f0, 2, "SAME", depthwise=True)
    got_dw, got_sep = _run([dw, sep])
    np.testing.assert_allclose(got_dw, want, atol=1e-12)
    np.testing.assert_allclose(got_sep, np.einsum("nhwc,ck->nhwk", want, pw0[0, 0]), atol=1e-12)
    assert "SpaceToBatchND" in [op.type for op in tf.get_default_graph().get_operations()]


def test_dilation_errors():
    x = tf.zeros([1, 8, 8, 2])
    f = tf.zeros([3, 3, 2, 2])
    with pytest.raises(ValueError, match="strides > 1 are not supported in conjunction"):
        tf.nn.conv2d(x, f, [1, 2, 2, 1], "SAME", dilations=[1, 2, 2, 1])
    with pytest.raises(ValueError, match="rate must be a positive int"):
        tf.nn.atrous_conv2d(x, f, 0, "SAME")
    with pytest.raises(NotImplementedError, match="height and width are known"):
        tf.nn.atrous_conv2d(tf.placeholder(tf.float32, [None, None, None, 2]), f, 2, "SAME")


def test_dilations_attribute_of_depthwise_native_and_conv2d_transpose(numeric_gradient):
    """The ops' own dilations (TF's attribute), against the definition; conv2d_transpose is
    the adjoint of the dilated convolution: <conv(x, f), v> = <x, conv2d_transpose(v, f)>."""
    rng = np.random.RandomState(19)
    x0 = rng.uniform(-1, 1, (2, 7, 6, 2))
    f0 = rng.uniform(-1, 1, (3, 2, 2, 2))
    got = _run(tf.nn.depthwise_conv2d_native(tf.constant(x0), tf.constant(f0), [1, 1, 1, 1],
                                             "SAME", dilations=[1, 2, 2, 1]))
    np.testing.assert_allclose(got, _dilated_reference(x0, f0, 2, "SAME", depthwise=True),
                               atol=1e-12)
    ft = rng.uniform(-1, 1, (3, 2, 2, 3))  # [kh, kw, output_channels, in_channels]
    conv = _dilated_reference(x0, ft, 2, "SAME")  # [2, 7, 6, 3]
    v0 = rng.uniform(-1, 1, conv.shape)
    v = tf.placeholder(tf.float64, v0.shape)
    y = tf.nn.conv2d_transpose(v, tf.constant(ft), [2, 7, 6, 2], [1, 1, 1, 1], "SAME",
                               dilations=2)
    loss = tf.reduce_sum(y * y)
    (dv,) = tf.gradients(loss, v)
    with tf.Session() as sess:
        out = sess.run(y, {v: v0})
        np.testing.assert_allclose(np.sum(out * x0), np.sum(conv * v0), rtol=1e-12)
        np.testing.assert_allclose(sess.run(dv, {v: v0}), numeric_gradient(sess, loss, v, v0),
                                   atol=1e-6)


def _argmax_reference(x, k, s, include_batch):
    """TF's max_pool_with_argmax (VALID) by its documented index formula: the first maximum
    of each window in row-major order at [b, y, x, c] is (y * width + x) * channels + c, plus
    b * height * width * channels with include_batch_in_index."""
    n, h, w, c = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    vals, args = np.zeros((n, oh, ow, c)), np.zeros((n, oh, ow, c), np.int64)
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        window = x[b, i * s:i * s + k, j * s:j * s + k, ch]
        r, q = np.unravel_index(np.argmax(window), window.shape)  # first maximum
        vals[b, i, j, ch] = window[r, q]
        args[b, i, j, ch] = ((i * s + r) * w + j * s + q) * c + ch + \
            (b * h * w * c if include_batch else 0)
    return vals, args


@pytest.mark.parametrize("include_batch", [False, True])
def test_max_pool_with_argmax_matches_tfs_index_formula(include_batch, numeric_gradient):
    rng = np.random.RandomState(19)
    x0 = rng.permutation(2 * 6 * 5 * 3).reshape(2, 6, 5, 3) / 10.0  # no ties
    x0[0, 0:2, 0:2, 0] = 9.0  # a tie: the first position wins
    x = tf.placeholder(tf.float64, x0.shape)
    out, arg = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID",
                                          include_batch_in_index=include_batch)
    assert arg.dtype == tf.int64
    want_vals, want_args = _argmax_reference(x0, 2, 2, include_batch)
    loss = tf.reduce_sum(out * out)
    (dx,) = tf.gradients(loss, x)
    with tf.Session() as sess:
        got_vals, got_args = sess.run([out, arg], {x: x0})
        np.testing.assert_array_equal(got_vals, want_vals)
        np.testing.assert_array_equal(got_args, want_args)
        assert got_args[0, 0, 0, 0] == 0
        # The gradient goes to the argmax positions only.
        want_dx = np.zeros(x0.size)
        flat = want_args + (0 if include_batch else
                            np.arange(2).reshape(2, 1, 1, 1) * x0[0].size)
        np.add.at(want_dx, flat.ravel(), 2 * want_vals.ravel())
        np.testing.assert_allclose(sess.run(dx, {x: x0}), want_dx.reshape(x0.shape))
    _, arg32 = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                          Targmax=tf.int32)
    assert arg32.dtype == tf.int32
