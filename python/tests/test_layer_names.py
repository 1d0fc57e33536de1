"""tf.layers names as TF 1.15 gives them: variables follow variable scopes only (never name
scopes, never a while loop's frame), ops the name scope the layer's variable scope opened;
layer names made unique per variable scope; reuse=True / tf.AUTO_REUSE sharing; a
checkpoint written under one scoping restoring into a model built under another, and
TF's own estimator checkpoint warm-starting tf.layers built inside a name scope. Also
BatchNormalization with a bool tensor `training`, against a float64 numpy reference."""
import json
import os

import numpy as np
import pytest

import loom.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _var_names(collection=None):
    return sorted(v.name for v in tf.get_collection(collection or tf.GraphKeys.GLOBAL_VARIABLES))


def _op_names():
    return {op.name for op in tf.get_default_graph().get_operations()}


def _x(width=3):
    return tf.placeholder(tf.float32, [None, width], name="x")


def test_name_scope_does_not_change_variable_names():
    x = _x()
    with tf.name_scope("foo"):
        y = tf.layers.dense(x, 3, name="d")
    assert _var_names() == ["d/bias:0", "d/kernel:0"]
    assert "foo/d/MatMul" in _op_names()
    assert y.op.name == "foo/d/BiasAdd"


def test_variable_scope_prefixes_variables_and_ops():
    x = _x()
    with tf.variable_scope("vs"):
        tf.layers.dense(x, 3, name="d")
    assert _var_names() == ["vs/d/bias:0", "vs/d/kernel:0"]
    assert "vs/d/MatMul" in _op_names()


def test_nested_scopes():
    x = _x()
    with tf.variable_scope("outer"):
        with tf.name_scope("ns"):
            with tf.variable_scope("inner"):
                y = tf.layers.dense(x, 2, activation=tf.nn.relu)
    assert _var_names() == ["outer/inner/dense/bias:0", "outer/inner/dense/kernel:0"]
    assert y.op.name == "outer/ns/inner/dense/Relu"


def test_tower_name_scope_as_multi_gpu_code_writes_it():
    x = tf.placeholder(tf.float32, [None, 4, 4, 2])
    with tf.name_scope("tower_0"):
        c = tf.layers.conv2d(x, 3, 3, padding="same")
        b = tf.layers.batch_normalization(c, training=True)
        tf.layers.dense(tf.layers.flatten(b), 2)
    assert _var_names() == [
        "batch_normalization/beta:0", "batch_normalization/gamma:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0",
        "conv2d/bias:0", "conv2d/kernel:0", "dense/bias:0", "dense/kernel:0"]
    assert _var_names(tf.GraphKeys.TRAINABLE_VARIABLES) == [
        "batch_normalization/beta:0", "batch_normalization/gamma:0", "conv2d/bias:0",
        "conv2d/kernel:0", "dense/bias:0", "dense/kernel:0"]
    assert c.op.name == "tower_0/conv2d/BiasAdd"
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [u.name for u in updates] == ["tower_0/batch_normalization/update_ops"]


def test_while_loop_body_does_not_prefix_variables():
    x = _x(4)

    def body(i, v):
        return i + 1, tf.layers.dense(v, 4, name="d")

    _, out = tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x])
    assert _var_names() == ["d/bias:0", "d/kernel:0"]
    assert any(n.startswith("while/d/MatMul") for n in _op_names())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        xv = np.random.RandomState(0).randn(2, 4).astype(np.float32)
        got, k, b = sess.run([out, "d/kernel:0", "d/bias:0"], {x: xv})
    want = xv.astype(np.float64)
    for _ in range(3):
        want = want @ k + b
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_default_names_unique_per_variable_scope():
    x = _x()
    with tf.name_scope("a"):
        tf.layers.dense(x, 2)  # variables dense/, ops a/dense/
    tf.layers.dense(x, 2)  # variables dense_1/; its name scope "dense" is still free
    with tf.variable_scope("v"):
        tf.layers.dense(x, 2)  # a fresh count inside v
    assert _var_names() == ["dense/bias:0", "dense/kernel:0", "dense_1/bias:0",
                            "dense_1/kernel:0", "v/dense/bias:0", "v/dense/kernel:0"]
    ops = _op_names()
    assert {"a/dense/MatMul", "dense/MatMul", "v/dense/MatMul"} <= ops
    assert "dense_1/MatMul" not in ops


def test_functional_name_twice_needs_reuse():
    x = _x()
    tf.layers.dense(x, 3, name="d")
    with pytest.raises(ValueError, match="Variable d/kernel already exists"):
        tf.layers.dense(x, 3, name="d")


def test_functional_reuse_true_shares_variables():
    x = _x()
    y1 = tf.layers.dense(x, 3, name="d")
    y2 = tf.layers.dense(x, 3, name="d", reuse=True)
    assert _var_names() == ["d/bias:0", "d/kernel:0"]
    assert y2.op.name == "d_1/BiasAdd"  # the name scope is made unique, as TF's
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([y1, y2], {x: np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(a, b)


def test_reuse_true_of_a_missing_layer_is_an_error():
    with pytest.raises(ValueError, match="Variable d/kernel does not exist"):
        tf.layers.dense(_x(), 3, name="d", reuse=True)


def test_variable_scope_reuse_and_auto_reuse_two_towers():
    x1, x2 = _x(), _x()
    with tf.variable_scope("model"):
        t1 = tf.layers.dense(tf.layers.dense(x1, 4, tf.nn.relu), 2)
    with tf.variable_scope("model", reuse=True):
        t2 = tf.layers.dense(tf.layers.dense(x2, 4, tf.nn.relu), 2)
    names = ["model/dense/bias:0", "model/dense/kernel:0", "model/dense_1/bias:0",
             "model/dense_1/kernel:0"]
    assert _var_names() == names
    assert t2.op.name == "model_1/dense_1/BiasAdd"
    for _ in range(2):
        with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
            tf.layers.dense(x1, 2)
    assert _var_names() == names + ["shared/dense/bias:0", "shared/dense/kernel:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        xv = np.random.RandomState(1).randn(3, 3).astype(np.float32)
        a, b = sess.run([t1, t2], {x1: xv, x2: xv})
    np.testing.assert_array_equal(a, b)


def test_get_variable_returns_a_layers_variable():
    y = tf.layers.dense(_x(), 3, name="d")
    with tf.variable_scope("d", reuse=True):
        kernel = tf.get_variable("kernel")
    assert kernel is y.graph.get_tensor_by_name("d/kernel:0")


def test_layer_object_called_twice_builds_in_its_name_scope():
    layer = tf.layers.Dense(3)
    x = _x()
    with tf.name_scope("s"):
        y1 = layer(x)
    y2 = layer(x)
    assert _var_names() == ["dense/bias:0", "dense/kernel:0"]
    assert y1.op.name == "s/dense/BiasAdd"
    assert y2.op.name == "s/dense/BiasAdd_1"
    assert layer.scope_name == "dense"
    assert [v.name for v in layer.variables] == ["dense/kernel:0", "dense/bias:0"]
    other = tf.layers.Dense(3, name="dense")  # a class with a name is made unique
    other(x)
    assert other.scope_name == "dense_1"


def test_batch_norm_class_reused_in_two_towers():
    bn = tf.layers.BatchNormalization()
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.name_scope("tower_0"):
        bn(x, training=True)
    with tf.name_scope("tower_1"):
        bn(x, training=True)
    assert _var_names() == [
        "batch_normalization/beta:0", "batch_normalization/gamma:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    assert len(bn.updates) == 2
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2


def test_subclass_add_weight_follows_the_variable_scope():
    class Scale(tf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [int(input_shape[-1])],
                                     initializer=tf.ones_initializer(),
                                     regularizer=lambda v: tf.reduce_sum(v))

        def call(self, inputs):
            return inputs * self.w

    x = _x()
    with tf.name_scope("ns"):
        y = Scale()(x)
        with tf.variable_scope("vs"):
            Scale(name="scale")(x)
    assert _var_names() == ["scale/w:0", "vs/scale/w:0"]
    assert y.op.name.startswith("ns/scale/")
    penalties = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [p.op.name.rsplit("/", 1)[0] for p in penalties] == ["ns/scale/w/Regularizer",
                                                               "ns/vs/scale/w/Regularizer"]


def test_variable_scope_initializer_and_regularizer_reach_layers():
    x = _x()
    with tf.variable_scope("s", initializer=tf.constant_initializer(0.5),
                           regularizer=lambda v: tf.reduce_sum(tf.abs(v))):
        tf.layers.dense(x, 2)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert sorted(p.op.name.rsplit("/", 1)[0] for p in losses) == [
        "s/dense/bias/Regularizer", "s/dense/kernel/Regularizer"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias, total = sess.run(["s/dense/kernel:0", "s/dense/bias:0",
                                        tf.add_n(losses)])
    np.testing.assert_array_equal(kernel, np.full((3, 2), 0.5, np.float32))
    np.testing.assert_array_equal(bias, np.zeros(2, np.float32))  # bias keeps zeros
    assert total == pytest.approx(3.0)


def test_checkpoint_without_scopes_restores_into_a_model_in_a_name_scope(tmp_path):
    rng = np.random.RandomState(2)
    xv = rng.randn(4, 3).astype(np.float32)
    g1 = tf.Graph()
    with g1.as_default():
        x = _x()
        y = tf.layers.dense(tf.layers.dense(x, 5, tf.nn.relu), 2)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            want = sess.run(y, {x: xv})
            path = saver.save(sess, str(tmp_path / "model"), global_step=1)
    g2 = tf.Graph()
    with g2.as_default():
        x = _x()
        with tf.name_scope("tower_0"):
            y = tf.layers.dense(tf.layers.dense(x, 5, tf.nn.relu), 2)
        saver = tf.train.Saver({v.op.name: v for v in tf.global_variables()})
        with tf.Session() as sess:
            saver.restore(sess, path)
            got = sess.run(y, {x: xv})
    np.testing.assert_array_equal(got, want)


def _tf_checkpoint():
    root = os.environ.get("LOOM_SOURCE_DIR",
                          os.path.join(os.path.dirname(__file__), "..", ".."))
    tf_dir = os.path.join(root, "testdata", "tf")
    with open(os.path.join(tf_dir, "expected_tf.json")) as f:
        tensors = json.load(f)["checkpoints"]["tfx_estimator_ckpt/model.ckpt-999"]["tensors"]
    return os.path.join(tf_dir, "tfx_estimator_ckpt", "model.ckpt-999"), tensors


def test_tf_checkpoint_warm_starts_layers_built_in_a_name_scope(model_dir):
    """TF's own DNN checkpoint (dnn/hiddenlayer_0/kernel ...) warm-starts tf.layers built
    inside tf.name_scope("tower_0"): only the variable scope "dnn" is in the names."""
    ckpt, tensors = _tf_checkpoint()

    def model_fn(features, labels, mode):
        net = features["x"]
        with tf.name_scope("tower_0"), tf.variable_scope("dnn"):
            for i, units in enumerate([100, 70, 48, 34]):
                net = tf.layers.dense(net, units, tf.nn.relu, name="hiddenlayer_%d" % i)
            logits = tf.layers.dense(net, 1, name="logits")
        loss = tf.reduce_mean(tf.square(logits - labels))
        train_op = tf.train.GradientDescentOptimizer(0.0).minimize(
            loss, global_step=tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn():
        x = np.zeros((4, 3), np.float32)
        return tf.data.Dataset.from_tensor_slices(({"x": x}, np.zeros((4, 1), np.float32))) \
            .batch(4)

    est = tf.estimator.Estimator(
        model_fn, model_dir=model_dir,
        warm_start_from=tf.estimator.WarmStartSettings(ckpt, vars_to_warm_start="dnn/.*"))
    est.train(input_fn, steps=1)
    for name in ("dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_3/bias", "dnn/logits/kernel"):
        value = est.get_variable_value(name)
        assert list(value.shape) == tensors[name]["shape"]
        first = tensors[name]["first_values"]
        np.testing.assert_allclose(value.reshape(-1)[:len(first)], first, rtol=1e-6)
        assert float(value.sum()) == pytest.approx(tensors[name]["sum"], rel=1e-4, abs=1e-4)


# ---- BatchNormalization with a tensor `training` -----------------------------------------

def _numpy_bn_steps(batches, flags, momentum, epsilon, unbiased):
    """float64 TF1 batch norm (gamma 1, beta 0): each step's output and the moving
    statistics after it; the moving ones move only on training steps."""
    channels = batches[0].shape[-1]
    mm, mv = np.zeros(channels), np.ones(channels)
    outs, stats = [], []
    for x, training in zip(batches, flags):
        x = x.astype(np.float64)
        axes = tuple(range(x.ndim - 1))
        if training:
            mean, var = x.mean(axis=axes), x.var(axis=axes)
            n = x.size / channels
            target = var * n / max(n - 1, 1) if unbiased else var
            outs.append((x - mean) / np.sqrt(var + epsilon))
            mm = mm - (mm - mean) * (1 - momentum)
            mv = mv - (mv - target) * (1 - momentum)
        else:
            outs.append((x - mm) / np.sqrt(mv + epsilon))
        stats.append((mm.copy(), mv.copy()))
    return outs, stats


@pytest.mark.parametrize("shape,unbiased", [((8, 3), False), ((2, 3, 3, 4), True)])
def test_batch_norm_with_a_training_placeholder(shape, unbiased):
    """2-D inputs take TF's non-fused path (biased variance in the moving average); 4-D
    NHWC float32 ones the fused kernel's (the moving variance gets n / (n - 1))."""
    rng = np.random.RandomState(3)
    is_training = tf.placeholder_with_default(False, [], name="is_training")
    x = tf.placeholder(tf.float32, [None] + list(shape[1:]))
    y = tf.layers.batch_normalization(x, momentum=0.9, training=is_training)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 1
    with tf.control_dependencies(updates):
        step = tf.identity(y)
    batches = [rng.randn(*shape).astype(np.float32) * 2 + 1 for _ in range(5)]
    flags = [True, True, False, True, False]
    want_out, want_stats = _numpy_bn_steps(batches, flags, 0.9, 1e-3, unbiased)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for xv, flag, want, (mm, mv) in zip(batches, flags, want_out, want_stats):
            feed = {x: xv, is_training: True} if flag else {x: xv}
            got = sess.run(step, feed)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            got_mm, got_mv = sess.run(["batch_normalization/moving_mean:0",
                                       "batch_normalization/moving_variance:0"])
            np.testing.assert_allclose(got_mm, mm, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got_mv, mv, rtol=1e-5, atol=1e-6)


def test_batch_norm_training_tensor_gradients_reach_gamma_and_beta():
    is_training = tf.placeholder(tf.bool, [])
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    y = tf.layers.batch_normalization(x, training=is_training, center=True, scale=True)
    loss = tf.reduce_sum(y * tf.constant([[1.0, 2.0, 3.0]]))
    grads = tf.gradients(loss, [tf.trainable_variables()[0], tf.trainable_variables()[1]])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g_train = sess.run(grads, {is_training: True})
        g_infer = sess.run(grads, {is_training: False})
    # beta's gradient is the sum of dL/dy (the weights times the batch), either way.
    names = [v.op.name for v in tf.trainable_variables()[:2]]
    beta = names.index("batch_normalization/beta")
    np.testing.assert_allclose(g_train[beta], [4.0, 8.0, 12.0], rtol=1e-6)
    np.testing.assert_allclose(g_infer[beta], [4.0, 8.0, 12.0], rtol=1e-6)
    gamma = 1 - beta
    # Training: sum of the normalized batch is 0 per channel; inference: x / sqrt(1 + eps).
    np.testing.assert_allclose(g_train[gamma], [0.0, 0.0, 0.0], atol=1e-5)
    want = np.arange(12, dtype=np.float64).reshape(4, 3).sum(0) / np.sqrt(1 + 1e-3)
    np.testing.assert_allclose(g_infer[gamma], want * [1, 2, 3], rtol=1e-5)


def test_batch_norm_constant_training_tensor_is_decided_when_built():
    x = tf.placeholder(tf.float32, [None, 2])
    tf.layers.batch_normalization(x, training=tf.constant(False))
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    assert not any("moments" in n for n in _op_names())


def test_batch_norm_training_of_a_wrong_dtype_is_a_clear_error():
    x = tf.placeholder(tf.float32, [None, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="training must be a bool scalar"):
        tf.layers.batch_normalization(x, training=tf.placeholder(tf.int32, []))
    with pytest.raises(TypeError, match="training must be a Python bool or a bool tensor"):
        tf.layers.batch_normalization(x, training="yes")


def test_dropout_with_a_training_placeholder():
    is_training = tf.placeholder_with_default(False, [])
    x = tf.ones([200, 10])
    y = tf.layers.dropout(x, rate=0.5, training=is_training)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), np.ones((200, 10), np.float32))
        dropped = sess.run(y, {is_training: True})
    assert set(np.unique(dropped)) <= {0.0, 2.0}
    assert 0.3 < (dropped == 0).mean() < 0.7


def test_multi_tower_program_as_tf1_writes_it():
    """The TF1 multi-GPU pattern (cifar10_multi_gpu_train.py, without tf.device): towers in
    name scopes inside the root variable scope, reuse_variables() after the first tower,
    per-tower UPDATE_OPS by name scope, one regularization penalty per variable, averaged
    gradients applied once."""
    rng = np.random.RandomState(4)
    xs = [rng.randn(6, 3).astype(np.float32) for _ in range(2)]
    ys = [rng.randn(6, 1).astype(np.float32) for _ in range(2)]
    opt = tf.train.GradientDescentOptimizer(0.1)
    grads, losses = [], []
    with tf.variable_scope(tf.get_variable_scope()):
        for i in range(2):
            with tf.name_scope("tower_%d" % i):
                h = tf.layers.dense(tf.constant(xs[i]), 4, tf.nn.relu, name="hidden",
                                    kernel_regularizer=tf.contrib.layers.l2_regularizer(0.5))
                h = tf.layers.batch_normalization(h, training=True, name="bn")
                out = tf.layers.dense(h, 1, name="out")
                loss = tf.reduce_mean(tf.square(out - ys[i]))
                tf.get_variable_scope().reuse_variables()
                losses.append(loss)
                grads.append(opt.compute_gradients(loss))
    assert _var_names(tf.GraphKeys.TRAINABLE_VARIABLES) == [
        "bn/beta:0", "bn/gamma:0", "hidden/bias:0", "hidden/kernel:0", "out/bias:0",
        "out/kernel:0"]
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1
    assert [u.name for u in tf.get_collection(tf.GraphKeys.UPDATE_OPS, "tower_1")] == [
        "tower_1/bn/update_ops"]
    averaged = []
    for pairs in zip(*grads):
        assert len({v.name for _, v in pairs}) == 1  # both towers' gradients of one variable
        averaged.append((tf.add_n([g for g, _ in pairs]) / 2.0, pairs[0][1]))
    train = opt.apply_gradients(averaged)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run("out/kernel:0")
        g = sess.run([a for a, v in averaged if v.op.name == "out/kernel"][0])
        sess.run(train)
        after = sess.run("out/kernel:0")
    np.testing.assert_allclose(after, before - 0.1 * g, rtol=1e-5, atol=1e-6)


def test_saver_dict_restores_from_other_checkpoint_names(tmp_path):
    """Saver({name in the checkpoint: variable}) loads a checkpoint written without the
    variable scope the new model has (TF1's transfer-learning idiom)."""
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Graph().as_default():
        x = _x()
        y = tf.layers.dense(x, 2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            want = sess.run(y, {x: xv})
            path = tf.train.Saver().save(sess, str(tmp_path / "plain"))
    with tf.Graph().as_default():
        x = _x()
        with tf.variable_scope("model"):
            y = tf.layers.dense(x, 2)
        saver = tf.train.Saver({v.op.name[len("model/"):]: v for v in tf.global_variables()})
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(y, {x: xv}), want)
            with pytest.raises(NotImplementedError, match="model/dense/bias as dense/bias"):
                saver.save(sess, str(tmp_path / "renamed"))
        with pytest.raises(TypeError, match="maps checkpoint names"):
            tf.train.Saver({3: tf.global_variables()[0]})


def test_sublayers_of_a_subclass_live_in_its_variable_scope():
    class Block(tf.layers.Layer):
        def build(self, input_shape):
            self.hidden = tf.layers.Dense(4)
            self.heads = [tf.layers.Dense(2, name="proj")]

        def call(self, inputs):
            return self.heads[0](self.hidden(inputs))

    block = Block()
    x = _x()
    with tf.name_scope("t0"):
        y1 = block(x)
    y2 = block(x)
    names = ["block/dense/kernel:0", "block/dense/bias:0", "block/proj/kernel:0",
             "block/proj/bias:0"]
    assert sorted(_var_names()) == sorted(names)
    assert [v.name for v in block.variables] == names
    assert [v.name for v in block.trainable_variables] == names
    assert (y1.op.name, y2.op.name) == ("t0/block/proj/BiasAdd", "t0/block/proj/BiasAdd_1")


def test_make_template_shares_variables_between_towers():
    """tf.make_template, TF1's other weight-sharing idiom: the first call makes the
    variables in the template's scope, later calls (in other name scopes) share them."""
    def tower(x, units):
        h = tf.layers.dense(x, units, tf.nn.relu, name="hidden")
        return tf.layers.dense(h, 1, name="score") + tf.get_variable(
            "offset", [], initializer=tf.constant_initializer(0.5))

    shared = tf.make_template("siamese", tower, units=4)
    x1, x2 = _x(), _x()
    with tf.name_scope("left"):
        a = shared(x1)
    with tf.name_scope("right"):
        b = shared(x2)
    names = ["siamese/hidden/bias:0", "siamese/hidden/kernel:0", "siamese/offset:0",
             "siamese/score/bias:0", "siamese/score/kernel:0"]
    assert _var_names() == names
    assert sorted(v.name for v in shared.trainable_variables) == names
    assert shared.variable_scope_name == "siamese"
    assert a.op.name.startswith("left/siamese/") and b.op.name.startswith("right/siamese/")
    xv = np.random.RandomState(5).randn(3, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vb = sess.run([a, b], {x1: xv, x2: xv})
    np.testing.assert_array_equal(va, vb)

    def leaky(x):
        return x * tf.Variable(2.0, name="scale")

    bad = tf.make_template("bad", leaky)
    bad(x1)
    with pytest.raises(ValueError, match="Trainable variable created when calling a template"):
        bad(x2)


@pytest.mark.parametrize("how", ["minimize", "apply_gradients"])
def test_train_op_under_control_dependencies_runs_the_update_ops(how):
    """TF1's batch-norm idiom: the train op built inside
    tf.control_dependencies(UPDATE_OPS) moves the moving statistics with every step."""
    xv = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)  # batch mean [2, 4]
    x = tf.placeholder(tf.float32, [None, 2])
    loss = tf.reduce_sum(tf.layers.batch_normalization(x, momentum=0.5, training=True))
    opt = tf.train.GradientDescentOptimizer(0.0)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        if how == "minimize":
            train_op = opt.minimize(loss)
        else:
            train_op = opt.apply_gradients(opt.compute_gradients(loss))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train_op, {x: xv})
        got = sess.run("batch_normalization/moving_mean:0")
    np.testing.assert_allclose(got, (1 - 0.5 ** 3) * np.array([2.0, 4.0]), rtol=1e-6)


def test_group_inside_control_dependencies_runs_after_them():
    counter = tf.Variable(0.0, name="counter")
    other = tf.no_op(name="other")
    with tf.control_dependencies([tf.assign_add(counter, 1.0)]):
        step = tf.group(other)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        sess.run(step)
        assert sess.run(counter) == 2.0


def test_batch_norm_training_tensor_gradient_matches_the_static_modes():
    """d/dx through the cond equals the static graph's, in either mode."""
    xv = np.random.RandomState(6).randn(5, 3).astype(np.float32)
    weights = np.random.RandomState(7).randn(5, 3).astype(np.float32)

    def grad(training):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.constant(xv)
            y = tf.layers.batch_normalization(x, training=training)
            g = tf.gradients(tf.reduce_sum(y * weights), x)[0]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                return sess.run(g)

    static_true, static_false = grad(True), grad(False)
    graph = tf.Graph()
    with graph.as_default():
        flag = tf.placeholder(tf.bool, [])
        x = tf.constant(xv)
        y = tf.layers.batch_normalization(x, training=flag)
        g = tf.gradients(tf.reduce_sum(y * weights), x)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            dyn_true, dyn_false = sess.run(g, {flag: True}), sess.run(g, {flag: False})
    np.testing.assert_allclose(dyn_true, static_true, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dyn_false, static_false, rtol=1e-6)
    assert np.abs(static_true - static_false).max() > 1e-2  # the modes do differ
