"""tf.layers.separable_conv2d / SeparableConv2D, tf.layers.conv2d_transpose / Conv2DTranspose
and tf.keras.layers.DepthwiseConv2D (python/loom/compat/v1/layers.py): TF 1.15's variable
names and shapes, values against numpy references in float64 (by the layers' definitions,
with TF's SAME padding), Keras' transposed output size, gradients against central
differences, and the errors."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _pads(size, span, stride, same):
    """TF's output size and leading padding of a window spanning `span` inputs."""
    if not same:
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def _depthwise(x, f, strides=(1, 1), rate=(1, 1), same=False):
    """y[b, i, j, c * M + m] = sum x[b, i*sh + di*rh - pt, j*sw + dj*rw - pl, c] f[di, dj, c, m]."""
    n, h, w, c = x.shape
    kh, kw, _, m = f.shape
    oh, pt = _pads(h, (kh - 1) * rate[0] + 1, strides[0], same)
    ow, pl = _pads(w, (kw - 1) * rate[1] + 1, strides[1], same)
    y = np.zeros((n, oh, ow, c, m))
    for i in range(oh):
        for j in range(ow):
            for di in range(kh):
                for dj in range(kw):
                    r, s = i * strides[0] + di * rate[0] - pt, j * strides[1] + dj * rate[1] - pl
                    if 0 <= r < h and 0 <= s < w:
                        y[:, i, j] += x[:, r, s, :, None] * f[di, dj]
    return y.reshape(n, oh, ow, c * m)


def _transpose(v, f, out_hw, strides, rate=(1, 1), same=False):
    """Each v[b, i, j, q] spreads v * f[di, dj, :, q] over the window the convolution of the
    [n, H, W, F] output would read."""
    n, oh, ow, _ = v.shape
    kh, kw, nf, _ = f.shape
    H, W = out_hw
    assert _pads(H, (kh - 1) * rate[0] + 1, strides[0], same)[0] == oh
    assert _pads(W, (kw - 1) * rate[1] + 1, strides[1], same)[0] == ow
    pt = _pads(H, (kh - 1) * rate[0] + 1, strides[0], same)[1]
    pl = _pads(W, (kw - 1) * rate[1] + 1, strides[1], same)[1]
    y = np.zeros((n, H, W, nf))
    for i in range(oh):
        for j in range(ow):
            for di in range(kh):
                for dj in range(kw):
                    r, s = i * strides[0] + di * rate[0] - pt, j * strides[1] + dj * rate[1] - pl
                    if 0 <= r < H and 0 <= s < W:
                        y[:, r, s] += v[:, i, j] @ f[di, dj].T
    return y


def _names(variables):
    return [(v.name, v.shape.as_list()) for v in variables]


def test_variables_are_named_as_tf_1_15_names_them():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    tf.layers.separable_conv2d(x, 5, 3, padding="same", depth_multiplier=2)
    with tf.variable_scope("vs"):
        tf.layers.separable_conv2d(x, 4, (3, 2), use_bias=False, name="sep")
    up = tf.layers.conv2d_transpose(x, 6, 3, strides=2, padding="same")
    dw = tf.keras.layers.DepthwiseConv2D(3, depth_multiplier=2)
    out = dw(x)
    assert _names(tf.global_variables()) == [
        ("separable_conv2d/depthwise_kernel:0", [3, 3, 3, 2]),
        ("separable_conv2d/pointwise_kernel:0", [1, 1, 6, 5]),
        ("separable_conv2d/bias:0", [5]),
        ("vs/sep/depthwise_kernel:0", [3, 2, 3, 1]),
        ("vs/sep/pointwise_kernel:0", [1, 1, 3, 4]),
        ("conv2d_transpose/kernel:0", [3, 3, 6, 3]),
        ("conv2d_transpose/bias:0", [6]),
        ("depthwise_conv2d/depthwise_kernel:0", [3, 3, 3, 2]),
        ("depthwise_conv2d/bias:0", [6]),
    ]
    assert up.shape.as_list() == [None, 16, 16, 6]
    assert out.shape.as_list() == [None, 6, 6, 6]
    assert dw.depthwise_kernel.name == "depthwise_conv2d/depthwise_kernel:0"
    # A second layer of each kind is made unique; a class call reuses its variables.
    dw(x)
    tf.keras.layers.SeparableConv2D(2, 1)(x)
    tf.keras.layers.Conv2DTranspose(2, 1)(x)
    names = [v.name for v in tf.global_variables()]
    assert "separable_conv2d_1/pointwise_kernel:0" in names
    assert "conv2d_transpose_1/kernel:0" in names
    assert len(names) == 9 + 3 + 2


@pytest.mark.parametrize("strides,rate,padding", [((1, 1), (1, 1), "same"),
                                                  ((2, 2), (1, 1), "same"),
                                                  ((1, 2), (1, 1), "valid"),
                                                  ((1, 1), (2, 2), "same"),
                                                  ((1, 1), (2, 3), "valid")])
def test_values_match_numpy_in_float64(strides, rate, padding):
    rng = np.random.RandomState(5)
    x0 = rng.uniform(-1, 1, (2, 9, 8, 3))
    x = tf.placeholder(tf.float64, x0.shape)
    init = tf.random_uniform_initializer(-1, 1, seed=3)
    sep = tf.layers.SeparableConv2D(4, (3, 2), strides, padding, dilation_rate=rate,
                                    depth_multiplier=2, activation=tf.nn.relu,
                                    bias_initializer=init)
    dw = tf.keras.layers.DepthwiseConv2D((2, 3), strides, padding, depth_multiplier=2,
                                         dilation_rate=rate, bias_initializer=init)
    up = tf.keras.layers.Conv2DTranspose(2, (3, 2), strides, padding, dilation_rate=rate,
                                         activation="tanh", bias_initializer=init)
    ys = [sep(x), dw(x), up(x)]
    same = padding == "same"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(ys, {x: x0})
        sdw, spw, sb, dk, db, tk, tb = sess.run(
            [sep.depthwise_kernel, sep.pointwise_kernel, sep.bias, dw.depthwise_kernel, dw.bias,
             up.kernel, up.bias])
    mid = _depthwise(x0, sdw, strides, rate, same)
    np.testing.assert_allclose(got[0], np.maximum(mid @ spw[0, 0] + sb, 0), atol=1e-12)
    np.testing.assert_allclose(got[1], _depthwise(x0, dk, strides, rate, same) + db,
                               atol=1e-12)

    def deconv(size, k, s, r):  # Keras' deconv_output_length, output_padding None
        span = (k - 1) * r + 1
        return size * s if same else size * s + max(span - s, 0)
    hw = (deconv(9, 3, strides[0], rate[0]), deconv(8, 2, strides[1], rate[1]))
    assert got[2].shape == (2,) + hw + (2,)
    np.testing.assert_allclose(got[2], np.tanh(_transpose(x0, tk, hw, strides, rate, same) + tb),
                               atol=1e-12)


def test_transpose_output_padding_and_unknown_sizes():
    x = tf.placeholder(tf.float32, [None, None, None, 3])
    y = tf.keras.layers.Conv2DTranspose(2, 3, strides=(3, 2), padding="same",
                                        output_padding=(2, 1))(x)
    z = tf.layers.conv2d_transpose(x, 2, 4, strides=2)
    assert y.shape.as_list() == [None, None, None, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([y, z], {x: np.zeros((2, 5, 4, 3), np.float32)})
    # (5 - 1) * 3 + 3 - 2 * 1 + 2 = 15, (4 - 1) * 2 + 3 - 2 + 1 = 8; 5 * 2 + 2, 4 * 2 + 2.
    assert a.shape == (2, 15, 8, 2) and b.shape == (2, 12, 10, 2)


def test_gradients_in_inputs_and_variables(numeric_gradient):
    rng = np.random.RandomState(7)
    x0 = rng.uniform(-1, 1, (1, 5, 4, 2))
    x = tf.placeholder(tf.float64, x0.shape)
    h = tf.layers.separable_conv2d(x, 3, 2, padding="same", dilation_rate=2,
                                   depth_multiplier=2)
    y = tf.layers.conv2d_transpose(h, 2, 3, strides=2, padding="same")
    loss = tf.reduce_sum(tf.sin(y))
    variables = tf.trainable_variables()
    grads = tf.gradients(loss, [x] + variables)
    assert all(g is not None for g in grads)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(grads[0], {x: x0}),
                                   numeric_gradient(sess, loss, x, x0), atol=1e-6)
        # d loss / d depthwise_kernel by central differences through load().
        kernel = variables[0]
        k0 = sess.run(kernel)
        got = sess.run(grads[1], {x: x0})
        want = np.zeros_like(k0)
        for i in np.ndindex(*k0.shape):
            up, down = k0.copy(), k0.copy()
            up[i] += 1e-6
            down[i] -= 1e-6
            kernel.load(up, sess)
            hi = sess.run(loss, {x: x0})
            kernel.load(down, sess)
            lo = sess.run(loss, {x: x0})
            want[i] = (hi - lo) / 2e-6
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_regularizers_and_trainable():
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    tf.layers.separable_conv2d(x, 2, 3, depthwise_regularizer=tf.keras.regularizers.l2(0.1),
                               pointwise_regularizer=tf.keras.regularizers.l2(0.1))
    tf.keras.layers.DepthwiseConv2D(3, trainable=False)(x)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    assert [v.name for v in tf.trainable_variables()] == [
        "separable_conv2d/depthwise_kernel:0", "separable_conv2d/pointwise_kernel:0",
        "separable_conv2d/bias:0"]


def test_bad_arguments_are_clear_errors():
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    with pytest.raises(NotImplementedError, match="only 'channels_last'"):
        tf.layers.separable_conv2d(x, 2, 3, data_format="channels_first")
    with pytest.raises(NotImplementedError, match="only 'channels_last'"):
        tf.keras.layers.DepthwiseConv2D(3, data_format="channels_first")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="output_padding 2x2 must be non-negative and less than"):
        tf.keras.layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)(x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="channel dim of the inputs"):
        tf.keras.layers.DepthwiseConv2D(3)(tf.placeholder(tf.float32, [None, 6, 6, None]))
    with pytest.raises(NotImplementedError, match="activation 'gelu' is not supported"):
        tf.keras.layers.DepthwiseConv2D(3, activation="gelu")
    with pytest.raises(NotImplementedError, match="initializer 'lecun_normal' is not"):
        tf.keras.layers.DepthwiseConv2D(3, depthwise_initializer="lecun_normal")(x)


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv2d_dilation_rate_is_tfs_atrous_convolution(padding):
    rng = np.random.RandomState(11)
    x0 = rng.uniform(-1, 1, (2, 9, 8, 3))
    x = tf.placeholder(tf.float64, x0.shape)
    layer = tf.layers.Conv2D(2, 3, padding=padding, dilation_rate=(2, 3), use_bias=False)
    y = layer(x)
    assert layer.kernel.name == "conv2d/kernel:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, k = sess.run([y, layer.kernel], {x: x0})
    kh, kw = 3, 3
    sh, sw = (kh - 1) * 2 + 1, (kw - 1) * 3 + 1
    if padding == "same":
        th, tw = sh - 1, sw - 1
        xp = np.pad(x0, [(0, 0), (th // 2, th - th // 2), (tw // 2, tw - tw // 2), (0, 0)])
    else:
        xp = x0
    oh, ow = xp.shape[1] - sh + 1, xp.shape[2] - sw + 1
    want = sum(np.einsum("nhwc,co->nhwo", xp[:, di * 2:di * 2 + oh, dj * 3:dj * 3 + ow], k[di, dj])
               for di in range(kh) for dj in range(kw))
    assert got.shape == want.shape and y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(got, want, atol=1e-12)
    with pytest.raises(tf.errors.InvalidArgumentError, match="strides > 1 are not supported"):
        tf.layers.conv2d(x, 2, 3, strides=2, dilation_rate=2)


def test_gradient_penalty_through_transposed_and_depthwise_convolutions(numeric_gradient):
    """A WGAN-GP-style penalty |d loss / d v|^2 through a conv2d_transpose and a dilated
    depthwise layer: its gradients in v and in the depthwise kernel (second derivatives: the
    backprop ops' own gradients) against central differences."""
    rng = np.random.RandomState(23)
    v0 = rng.uniform(-1, 1, (1, 3, 3, 2))
    v = tf.placeholder(tf.float64, v0.shape)
    up = tf.layers.conv2d_transpose(v, 2, 3, strides=2, padding="same")
    layer = tf.keras.layers.DepthwiseConv2D(2, depth_multiplier=2, dilation_rate=2)
    loss = tf.reduce_sum(tf.sin(layer(up)))
    (g,) = tf.gradients(loss, v)
    penalty = tf.reduce_sum(g * g)
    dv, dk = tf.gradients(penalty, [v, layer.depthwise_kernel])
    assert all(x is not None for x in tf.gradients(penalty, tf.trainable_variables()))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(dv, {v: v0}),
                                   numeric_gradient(sess, penalty, v, v0), atol=1e-6)
        k0 = sess.run(layer.depthwise_kernel)
        got = sess.run(dk, {v: v0})
        want = np.zeros_like(k0)
        for i in np.ndindex(*k0.shape):
            values = []
            for h in (1e-6, -1e-6):
                k = k0.copy()
                k[i] += h
                layer.depthwise_kernel.load(k, sess)
                values.append(sess.run(penalty, {v: v0}))
            want[i] = (values[0] - values[1]) / 2e-6
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_other_keras_names_are_clear_errors():
    with pytest.raises(NotImplementedError, match="use tf.layers.MaxPooling2D"):
        tf.keras.layers.MaxPool2D  # noqa: B018
    with pytest.raises(NotImplementedError, match="build the model in an Estimator model_fn"):
        tf.keras.Sequential  # noqa: B018
    assert not hasattr(tf.keras.layers, "Dense") and hasattr(tf.keras.layers, "DepthwiseConv2D")
    with pytest.raises(AttributeError, match="tf.keras.layers.LSTM does not exist"):
        tf.keras.layers.LSTM  # noqa: B018
