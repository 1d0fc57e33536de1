"""Weight constraints (python/loom/compat/v1/_constraints.py, _variables._apply_constraints):
tf.keras.constraints' formulas against numpy in float64, and the optimizers projecting a
constrained variable after each update, as TF1's optimizers do (kernel_constraint /
bias_constraint of tf.layers, constraint= of tf.Variable / tf.get_variable)."""
import numpy as np
import pytest

import loom.compat.v1 as tf

EPS = 1e-7


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _norms(w, axis):
    return np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))


@pytest.mark.parametrize("constraint,reference", [
    (tf.keras.constraints.max_norm(1.5),
     lambda w: w * np.clip(_norms(w, 0), 0, 1.5) / (EPS + _norms(w, 0))),
    (tf.keras.constraints.MaxNorm(max_value=0.7, axis=1),
     lambda w: w * np.clip(_norms(w, 1), 0, 0.7) / (EPS + _norms(w, 1))),
    (tf.keras.constraints.non_neg(), lambda w: w * (w >= 0)),
    (tf.keras.constraints.unit_norm(), lambda w: w / (EPS + _norms(w, 0))),
    (tf.keras.constraints.MinMaxNorm(0.5, 1.2, rate=0.75),
     lambda w: w * (0.75 * np.clip(_norms(w, 0), 0.5, 1.2) + 0.25 * _norms(w, 0))
     / (EPS + _norms(w, 0))),
])
def test_keras_constraints_match_numpy_in_float64(constraint, reference):
    w = np.random.RandomState(3).randn(4, 5) * np.array([0.1, 0.5, 1.0, 3.0, 0.0])
    out = constraint(tf.constant(w, dtype=tf.float64))
    with tf.Session() as sess:
        got = sess.run(out)
    np.testing.assert_allclose(got, reference(w), rtol=1e-12, atol=1e-15)


def test_dense_constraints_project_after_each_update():
    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(8, 3).astype(np.float32))
    y = tf.constant(rng.randn(8, 2).astype(np.float32))
    layer = tf.layers.Dense(2, kernel_constraint=tf.keras.constraints.max_norm(0.5),
                            bias_constraint=tf.keras.constraints.non_neg(), name="d")
    loss = tf.losses.mean_squared_error(y, layer(x))
    assert layer.kernel.constraint is layer.kernel_constraint
    lr = 0.8
    gk, gb = tf.gradients(loss, [layer.kernel, layer.bias])
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            k, b, dk, db = sess.run([layer.kernel, layer.bias, gk, gb])
            sess.run(train)
            k_new, b_new = sess.run([layer.kernel, layer.bias])
            step_k = (k - lr * dk).astype(np.float64)
            want_k = step_k * np.clip(_norms(step_k, 0), 0, 0.5) / (EPS + _norms(step_k, 0))
            np.testing.assert_allclose(k_new, want_k, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(b_new, np.maximum(b - lr * db, 0), rtol=1e-5, atol=1e-6)
        assert np.all(_norms(k_new, 0) <= 0.5 + 1e-5)


def test_variable_constraint_with_minimize_and_apply_gradients():
    a = tf.Variable([0.2, 0.9], name="a", constraint=lambda v: tf.clip_by_value(v, 0.0, 1.0))
    b = tf.get_variable("b", initializer=tf.constant([5.0]),
                        constraint=lambda v: tf.clip_by_value(v, 0.0, 1.0))
    assert a.constraint is not None and b.constraint is not None
    loss = tf.reduce_sum(a) - tf.reduce_sum(b)  # pushes a down, b up
    opt = tf.train.GradientDescentOptimizer(0.5)
    only_a = opt.minimize(loss, var_list=[a])
    both = opt.apply_gradients(opt.compute_gradients(loss))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(only_a)
        # a stepped to [-0.3, 0.4] and was clipped; b got no update, so no projection
        # either (TF applies a constraint only to the variables it updates).
        np.testing.assert_allclose(sess.run(a), [0.0, 0.4], atol=1e-7)
        np.testing.assert_allclose(sess.run(b), [5.0])
        sess.run(both)
        np.testing.assert_allclose(sess.run(a), [0.0, 0.0], atol=1e-7)
        np.testing.assert_allclose(sess.run(b), [1.0])


def test_a_constraint_must_be_callable():
    with pytest.raises(ValueError, match="constraint"):
        tf.Variable([1.0], constraint=3)
    with pytest.raises(ValueError, match="kernel_constraint"):
        tf.layers.Dense(2, kernel_constraint="max_norm")


def test_estimator_trains_with_a_unit_norm_kernel(model_dir):
    rng = np.random.RandomState(1)
    xs = rng.randn(64, 3).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5]], np.float32))

    def model_fn(features, labels, mode):
        pred = tf.layers.dense(features["x"], 1, use_bias=False,
                               kernel_constraint=tf.keras.constraints.unit_norm())
        loss = tf.losses.mean_squared_error(labels, pred)
        train_op = tf.train.AdamOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": xs}, ys, batch_size=16, num_epochs=None,
                                                 shuffle=True), steps=20)
    kernel = est.get_variable_value("dense/kernel")
    np.testing.assert_allclose(np.linalg.norm(kernel, axis=0), [1.0], rtol=1e-5)


def test_subclassed_layer_add_weight_constraint():
    class Positive(tf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [2], initializer=tf.constant_initializer(0.1),
                                     constraint=tf.keras.constraints.non_neg())

        def call(self, x):
            return x * self.w

    out = Positive()(tf.constant([1.0, 1.0]))
    train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(out))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)  # 0.1 - 1.0 < 0: projected to 0
        np.testing.assert_allclose(sess.run(tf.get_default_graph().get_tensor_by_name(
            "positive/w:0")), [0.0, 0.0])
