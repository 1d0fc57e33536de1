"""tf.layers' classes (Dense, Conv2D, MaxPooling2D, Dropout, BatchNormalization, Flatten:
__call__ / apply, variables shared across calls, trainable_variables), regularizers as
TF1 code writes them (tf.contrib.layers.l2_regularizer, tf.keras.regularizers.l2) with
tf.losses.get_regularization_loss(), layer initializers, smart_cond and tf.while_loop's
NotImplementedError. Values are checked against numpy."""
import numpy as np
import pytest

import loom.compat.v1 as tf


def _run(graph, fetches, feed_dict=None):
    with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def test_dense_class_shares_its_variables_across_calls():
    rng = np.random.RandomState(0)
    a = rng.randn(4, 3).astype(np.float32)
    b = rng.randn(5, 3).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x1 = tf.placeholder(tf.float32, [None, 3])
        x2 = tf.placeholder(tf.float32, [None, 3])
        layer = tf.layers.Dense(2, activation=tf.nn.relu,
                                kernel_initializer=tf.random_normal_initializer(seed=3),
                                bias_initializer=tf.constant_initializer(0.25))
        assert not layer.built and layer.variables == []
        y1 = layer(x1)
        y2 = layer.apply(x2)
        assert layer.built
        assert [v.name for v in layer.variables] == ["dense/kernel:0", "dense/bias:0"]
        assert [v.name for v in layer.trainable_variables] == ["dense/kernel:0",
                                                               "dense/bias:0"]
        assert layer.kernel.name == "dense/kernel:0" and layer.bias.name == "dense/bias:0"
        assert len(tf.global_variables()) == 2  # the second call made none
        # TF1's tf.layers: every call builds in the layer's own name scope.
        assert (y1.op.name, y2.op.name) == ("dense/Relu", "dense/Relu_1")
        assert y2.shape.as_list() == [None, 2]
        v1, v2, kernel, bias = _run(graph, [y1, y2, layer.kernel, layer.bias],
                                    {x1: a, x2: b})
    np.testing.assert_allclose(bias, [0.25, 0.25])
    np.testing.assert_allclose(v1, np.maximum(a @ kernel + bias, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v2, np.maximum(b @ kernel + bias, 0), rtol=1e-5, atol=1e-6)


def test_dense_class_on_rank3_inputs_and_not_trainable():
    x_value = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3, 4])
        layer = tf.layers.Dense(5, kernel_initializer=tf.ones_initializer(), trainable=False,
                                name="frozen")
        y1, y2 = layer(x), layer(x)
        assert layer.trainable_variables == []
        assert [v.name for v in layer.non_trainable_variables] == ["frozen/kernel:0",
                                                                   "frozen/bias:0"]
        assert tf.trainable_variables() == []
        v1, v2 = _run(graph, [y1, y2], {x: x_value})
    expected = np.repeat(x_value.sum(axis=2, keepdims=True), 5, axis=2)
    np.testing.assert_allclose(v1, expected, rtol=1e-5)
    np.testing.assert_allclose(v2, expected, rtol=1e-5)


def _conv_valid(x, k, stride):
    n, h, w, _ = x.shape
    kh, kw, _, f = k.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, f), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


def test_conv_pool_flatten_classes():
    image = np.random.RandomState(1).rand(2, 6, 6, 2).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 2])
        conv = tf.layers.Conv2D(3, (3, 3), strides=1, padding="valid",
                                kernel_initializer=tf.truncated_normal_initializer(seed=1),
                                bias_initializer=tf.constant_initializer(-0.1))
        pool = tf.layers.MaxPooling2D(pool_size=2, strides=2)
        flat = tf.layers.Flatten()
        c1 = conv(x)
        c2 = conv.apply(x * 2.0)
        p = pool(c1)
        f = flat(p)
        assert [v.name for v in conv.variables] == ["conv2d/kernel:0", "conv2d/bias:0"]
        assert len(tf.global_variables()) == 2
        assert pool.variables == [] and flat.variables == []
        assert c1.shape.as_list() == [None, 4, 4, 3]
        assert f.shape.as_list() == [None, 12]
        v1, v2, pv, fv, kernel = _run(graph, [c1, c2, p, f, conv.kernel], {x: image})
    np.testing.assert_allclose(v1, _conv_valid(image, kernel, 1) - 0.1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(v2, _conv_valid(2 * image, kernel, 1) - 0.1, rtol=1e-4,
                               atol=1e-5)
    expected_pool = v1.reshape(2, 2, 2, 2, 2, 3).max(axis=(2, 4))
    np.testing.assert_allclose(pv, expected_pool)
    np.testing.assert_allclose(fv, expected_pool.reshape(2, 12))


def test_dropout_class():
    x_value = np.ones((50, 40), np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(x_value)
        layer = tf.layers.Dropout(rate=0.25, seed=7)
        off = layer(x)  # training defaults to False: the identity
        on = layer(x, training=True)
        v_off, v_on = _run(graph, [off, on])
    np.testing.assert_array_equal(v_off, x_value)
    kept = v_on != 0
    np.testing.assert_allclose(v_on[kept], 1 / 0.75, rtol=1e-6)
    assert 0.6 < kept.mean() < 0.9


def test_batch_normalization_class_training_then_inference():
    rng = np.random.RandomState(2)
    batch = rng.randn(8, 3).astype(np.float32) * 2 + 1
    other = rng.randn(4, 3).astype(np.float32)
    momentum, eps = 0.9, 1e-3
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        bn = tf.layers.BatchNormalization(momentum=momentum, epsilon=eps,
                                          beta_initializer=tf.constant_initializer(0.5),
                                          gamma_initializer=tf.constant_initializer(2.0))
        train_out = bn(x, training=True)
        infer_out = bn(x, training=False)
        again_train = bn(x, training=True)
        assert sorted(v.name for v in bn.variables) == [
            "batch_normalization/beta:0", "batch_normalization/gamma:0",
            "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
        assert sorted(v.name for v in bn.trainable_variables) == [
            "batch_normalization/beta:0", "batch_normalization/gamma:0"]
        assert len(tf.global_variables()) == 4
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert len(updates) == 2 and len(bn.updates) == 2  # one per training call
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            t = sess.run(train_out, {x: batch})
            sess.run(updates[0], {x: batch})
            mm, mv = sess.run([bn.moving_mean, bn.moving_variance])
            i = sess.run(infer_out, {x: other})
            sess.run(updates[1], {x: batch})  # the second training call's own update
            mm2 = sess.run(bn.moving_mean)
            t2 = sess.run(again_train, {x: batch})
    mean, var = batch.mean(axis=0), batch.var(axis=0)
    np.testing.assert_allclose(t, (batch - mean) / np.sqrt(var + eps) * 2.0 + 0.5, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(t2, t, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mm, (1 - momentum) * mean, rtol=1e-5)
    np.testing.assert_allclose(mv, 1 - (1 - momentum) * (1 - var), rtol=1e-5)
    np.testing.assert_allclose(mm2, mm - (mm - mean) * (1 - momentum), rtol=1e-5)
    np.testing.assert_allclose(i, (other - mm) / np.sqrt(mv + eps) * 2.0 + 0.5, rtol=1e-4,
                               atol=1e-5)


def test_regularizers_reach_the_regularization_losses_collection():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        h = tf.layers.dense(x, 2, kernel_initializer=tf.constant_initializer(2.0),
                            bias_initializer=tf.constant_initializer(-1.0),
                            kernel_regularizer=tf.contrib.layers.l2_regularizer(0.1),
                            bias_regularizer=tf.contrib.layers.l1_regularizer(0.5))
        layer = tf.layers.Dense(1, kernel_initializer=tf.constant_initializer(3.0),
                                kernel_regularizer=tf.keras.regularizers.l2(0.01),
                                activity_regularizer=tf.keras.regularizers.l1(0.1))
        out = layer(h)
        layer(h)  # a second call: the variables' penalties are not added again
        # A disabled regularizer (scale 0) adds nothing, as in TF.
        tf.layers.dense(x, 2, kernel_regularizer=tf.contrib.layers.l2_regularizer(0.0))
        losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        names = [t.name for t in losses]
        assert names[:3] == ["dense/kernel_regularizer/penalty:0",
                             "dense/bias_regularizer/penalty:0",
                             "dense_1/kernel_regularizer/penalty:0"]
        assert len(losses) == 5  # + the two calls' activity penalties
        assert len(layer.losses) == 3
        assert tf.losses.get_regularization_losses() == losses
        total_reg = tf.losses.get_regularization_loss()
        data_loss = tf.losses.mean_squared_error(tf.zeros_like(out), out)
        total = tf.losses.get_total_loss()
        x_value = np.array([[1.0, 0.0, 1.0]], np.float32)
        values, reg, dl, tl, out_v = _run(graph, [losses, total_reg, data_loss, total, out],
                                          {x: x_value})
    assert values[0] == pytest.approx(0.1 * (6 * 4.0) / 2)  # contrib l2: scale * sum(w^2)/2
    assert values[1] == pytest.approx(0.5 * 2 * 1.0)  # l1: scale * sum(|b|)
    assert values[2] == pytest.approx(0.01 * 2 * 9.0)  # keras l2: l * sum(w^2)
    h_value = x_value @ np.full((3, 2), 2.0) - 1.0
    expected_out = h_value @ np.full((2, 1), 3.0)
    np.testing.assert_allclose(out_v, expected_out)
    assert values[3] == pytest.approx(0.1 * np.abs(expected_out).sum())
    assert reg == pytest.approx(sum(values), rel=1e-6)
    assert tl == pytest.approx(dl + reg, rel=1e-6)


def test_regularizer_argument_checks_and_batch_norm_regularizer():
    with pytest.raises(ValueError, match="integer"):
        tf.contrib.layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="less than 0"):
        tf.contrib.layers.l1_regularizer(-0.5)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        tf.layers.batch_normalization(x, gamma_initializer=tf.constant_initializer(3.0),
                                      gamma_regularizer=tf.contrib.layers.l2_regularizer(0.5))
        with pytest.raises(TypeError, match="callable"):
            tf.layers.dense(x, 1, kernel_regularizer=0.1)
        reg = tf.losses.get_regularization_loss()
        value = _run(graph, reg)
    assert value == pytest.approx(0.5 * (2 * 9.0) / 2)


def test_regularized_model_trains_in_an_estimator(model_dir):
    """The penalties land in the C++ graph's collection, where the Estimator's graph keeps
    them: a model_fn minimizing get_total_loss shrinks the kernel as weight decay."""
    x = np.zeros((64, 2), np.float32)
    y = np.zeros((64, 1), np.float32)

    def model_fn(features, labels, mode):
        out = tf.layers.dense(features["x"], 1, kernel_initializer=tf.ones_initializer(),
                              kernel_regularizer=tf.contrib.layers.l2_regularizer(1.0),
                              name="reg")
        tf.losses.mean_squared_error(labels, out)
        loss = tf.losses.get_total_loss()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=64, num_epochs=None,
                                                 shuffle=False), steps=5)
    # d(w^2/2)/dw = w: each step multiplies the kernel by (1 - 0.1); the data term is 0.
    np.testing.assert_allclose(est.get_variable_value("reg/kernel"), np.full((2, 1), 0.9 ** 5),
                               rtol=1e-5)


def test_smart_cond_builds_one_branch_or_a_cond():
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.bool, [])
        calls = []

        def branch(value):
            def fn():
                calls.append(value)
                return tf.constant(value)
            return fn
        picked = tf.contrib.framework.smart_cond(False, branch(1.0), branch(2.0))
        also = tf.contrib.framework.smart_cond(tf.constant(True), branch(3.0), branch(4.0))
        assert calls == [2.0, 3.0]  # only the chosen branch is built
        # A predicate known only at run time: a real tf.cond, both branches built.
        computed = tf.contrib.framework.smart_cond(p, branch(5.0), branch(6.0))
        assert calls == [2.0, 3.0, 5.0, 6.0] and computed.op.type == "Merge"
        values = _run(graph, [picked, also, computed], {p: False})
    assert values == [2.0, 3.0, 6.0]


class ScaledDense(tf.layers.Layer):
    """A TF1-style subclass: variables in build, ops in call."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", [input_shape[-1].value, self.units],
                                      initializer=tf.constant_initializer(2.0),
                                      regularizer=tf.contrib.layers.l2_regularizer(0.5))
        self.scale = self.add_variable("scale", [], initializer=tf.ones_initializer(),
                                       trainable=False)

    def call(self, inputs, offset=0.0):
        out = tf.matmul(inputs, self.kernel) * self.scale + offset
        self.add_loss(tf.reduce_sum(out) * 0.0 + 1.0)  # a constant penalty per call
        self.add_update(self.scale.assign_add(1.0))
        return out


def test_layer_subclass_with_build_call_and_add_weight():
    x_value = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        layer = ScaledDense(3)
        assert layer.name == "scaled_dense"
        y1 = layer(x)
        y2 = layer.apply(x, offset=1.0)
        assert [v.name for v in layer.variables] == ["scaled_dense/kernel:0",
                                                     "scaled_dense/scale:0"]
        assert [v.name for v in layer.trainable_variables] == ["scaled_dense/kernel:0"]
        assert len(tf.global_variables()) == 2
        assert y1.op.name.startswith("scaled_dense/") and y2.op.name.startswith("scaled_dense/")
        assert y1.op.name != y2.op.name
        assert len(layer.losses) == 3  # the kernel's penalty, then one add_loss per call
        assert len(layer.updates) == 2
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == layer.updates
        v1, v2, reg = _run(graph, [y1, y2, tf.losses.get_regularization_loss()], {x: x_value})
        with pytest.raises(RuntimeError, match="build"):
            layer.add_weight("late", [1])
    np.testing.assert_allclose(v1, x_value @ np.full((2, 3), 2.0))
    np.testing.assert_allclose(v2, x_value @ np.full((2, 3), 2.0) + 1.0)
    assert reg == pytest.approx(0.5 * 6 * 4.0 / 2 + 2.0)
