"""TF1 patterns that gave a wrong answer silently, each as TF 1.15 defines it: a Python
float converted to an integer dtype (TF's TypeError, not truncation), an explicit empty
reduction axis list (no reduction, not the total), tf.rank's int32, tf.matmul on batches."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


@pytest.mark.parametrize("build", [
    lambda: tf.constant([1, 2]) + 0.5,
    lambda: tf.constant(0.5, dtype=tf.int32),
    lambda: tf.constant([1, 2.5], dtype=tf.int64),
    lambda: tf.assign_add(tf.Variable(0), 1.5),
    lambda: tf.maximum(tf.constant([1, 2]), 1.5),
    lambda: tf.constant(1, dtype=tf.bool),
])
def test_python_values_that_do_not_fit_the_dtype_are_a_type_error(build):
    with pytest.raises(TypeError, match="Expected (int32|int64|bool), got"):
        build()


def test_values_that_fit_still_convert_and_numpy_is_cast_as_tf():
    assert _run(tf.constant([1, 2]) + 2).tolist() == [3, 4]
    assert _run(tf.constant([1.0, 2.0]) * 2).tolist() == [2.0, 4.0]  # an int is a float
    assert _run(tf.constant(True, dtype=tf.bool)) == True  # noqa: E712
    assert _run(tf.constant(np.float32(2.7), dtype=tf.int32)) == 2  # numpy: astype, as TF


def test_an_empty_axis_list_reduces_nothing():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(_run(tf.reduce_sum(x, axis=[])), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(_run(tf.reduce_mean(x, reduction_indices=[])),
                                  [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(_run(tf.math.reduce_max(x, axis=())), [[1.0, 2.0], [3.0, 4.0]])
    assert _run(tf.reduce_sum(x)) == 10.0  # None: every axis
    assert _run(tf.reduce_sum(x, axis=[0, 1])) == 10.0


def test_rank_is_int32():
    x = tf.placeholder(tf.float32, [None, 3])
    r = tf.rank(x)
    assert r.dtype == tf.int32
    assert _run(r - tf.constant(1), {x: np.zeros((2, 3), np.float32)}) == 1


def test_matmul_of_batches_as_tf():
    rng = np.random.RandomState(0)
    a = rng.randn(4, 2, 3).astype(np.float32)
    b = rng.randn(4, 3, 5).astype(np.float32)
    got = _run(tf.matmul(tf.constant(a), tf.constant(b)))
    np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)
    bt = np.swapaxes(b, 1, 2).copy()
    got_t = _run(tf.matmul(tf.constant(a), tf.constant(bt), transpose_b=True))
    np.testing.assert_allclose(got_t, got, rtol=1e-5, atol=1e-5)


def test_where_with_a_vector_condition_picks_rows():
    c = tf.constant([True, False])
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    n = tf.constant([[10.0, 20.0], [30.0, 40.0]])
    np.testing.assert_array_equal(_run(tf.where(c, m, n)), [[1.0, 2.0], [30.0, 40.0]])
    same = tf.constant([[True, False], [False, True]])
    np.testing.assert_array_equal(_run(tf.where(same, m, n)), [[1.0, 20.0], [30.0, 4.0]])
    with pytest.raises(ValueError, match="first dimension"):
        tf.where(tf.constant([True, False, True]), m, n)


def test_dimension_arithmetic_as_tf():
    shape = tf.placeholder(tf.float32, [None, 3, 4]).shape
    assert (shape[1] * shape[2]).value == 12
    assert (shape[1] + 1).value == 4 and (2 * shape[1]).value == 6
    assert (shape[2] // 3).value == 1 and (10 - shape[1]).value == 7
    assert (shape[0] * 3).value is None  # unknown stays unknown
    assert shape[1] < 4 and (shape[0] < 4) is None
    with pytest.raises(TypeError, match="use //"):
        shape[1] / 2
    x = tf.ones([3, 2])
    assert _run(tf.reshape(x, [x.shape[0] * 2])).shape == (6,)


def test_out_of_range_python_ints_are_refused_not_wrapped():
    with pytest.raises(ValueError, match="outside"):
        tf.constant(2 ** 40, dtype=tf.int32)  # numpy would give 0
    with pytest.raises(ValueError, match="outside"):
        tf.constant(-1, dtype=tf.uint8)  # numpy would give 255
    assert _run(tf.constant(2 ** 40)) == 2 ** 40  # no dtype: int64, as TF


def test_constant_with_a_larger_shape_pads_with_the_last_element():
    np.testing.assert_array_equal(_run(tf.constant([1, 2], shape=[4])), [1, 2, 2, 2])
    np.testing.assert_array_equal(_run(tf.constant([[1.0], [2.0]], shape=[2, 2])),
                                  [[1.0, 2.0], [2.0, 2.0]])
    np.testing.assert_array_equal(_run(tf.constant(7, shape=[2])), [7, 7])
    with pytest.raises(TypeError, match="Too many elements"):
        tf.constant([1, 2, 3], shape=[2])


def test_tf1_cast_shorthands():
    x = tf.constant([-1.7, 2.5])
    assert tf.to_int32(x).dtype == tf.int32 and tf.to_float(tf.constant([1])).dtype == tf.float32
    assert _run(tf.to_int32(x)).tolist() == [-1, 2]
    assert _run(tf.to_int64(x)).dtype == np.int64 and _run(tf.to_double(x)).dtype == np.float64


def test_matmul_adjoint_is_the_transpose_for_real_dtypes():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[5.0, 6.0], [7.0, 8.0]], np.float32)
    np.testing.assert_allclose(_run(tf.matmul(a, b, adjoint_b=True)), a @ b.T)
    np.testing.assert_allclose(_run(tf.matmul(a, b, adjoint_a=True)), a.T @ b)
    with pytest.raises(ValueError, match="Only one of"):
        tf.matmul(a, b, transpose_a=True, adjoint_a=True)


@pytest.mark.parametrize("mode, want", [
    ("REFLECT", [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4],
                 [3, 2, 1, 2, 3, 2, 1]]),
    ("SYMMETRIC", [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5],
                   [5, 4, 4, 5, 6, 6, 5]]),
    ("CONSTANT", [[0] * 7, [0, 0, 1, 2, 3, 0, 0], [0, 0, 4, 5, 6, 0, 0], [0] * 7]),
])
def test_pad_modes_as_tf_docs(mode, want):
    """TF 1.15's tf.pad docstring example (it padded REFLECT and SYMMETRIC with zeros)."""
    t = tf.constant([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(_run(tf.pad(t, [[1, 1], [2, 2]], mode)), want)


def test_pad_reflect_gradient_and_limits():
    x = tf.constant([1.0, 2.0, 3.0])
    y = tf.pad(x, [[2, 1]], "REFLECT")  # [3, 2, 1, 2, 3, 2]
    g = tf.gradients(tf.reduce_sum(y * tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])), x)[0]
    np.testing.assert_array_equal(_run(g), [3.0, 2.0 + 4.0 + 6.0, 1.0 + 5.0])
    with pytest.raises(ValueError, match="less than"):
        tf.pad(x, [[3, 0]], "REFLECT")
    with pytest.raises(ValueError, match="Unknown padding mode"):
        tf.pad(x, [[1, 1]], "WRAP")


def test_dropped_arguments_that_change_the_answer_are_refused():
    with pytest.raises(NotImplementedError, match="batch_dims"):
        tf.gather(tf.ones([2, 3]), [[0], [1]], batch_dims=1)
    with pytest.raises(NotImplementedError, match="channels-last"):
        tf.nn.bias_add(tf.ones([1, 2, 3, 3]), tf.ones([2]), data_format="NCHW")


def test_minimize_with_nothing_to_optimize_is_tf_value_error():
    w = tf.Variable([1.0], name="w")
    other = tf.Variable([2.0], name="other")
    loss = tf.reduce_sum(w * 2.0)
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.minimize(loss, var_list=[])  # the C++ default (every variable) must not apply
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.compute_gradients(loss, var_list=[])
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.minimize(loss, var_list=[other])
    train = opt.minimize(loss, var_list=[w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert sess.run(w).tolist() == [pytest.approx(0.8)]
        assert sess.run(other).tolist() == [2.0]


def test_a_saver_with_nothing_to_save(tmp_path):
    w = tf.Variable(1.0, name="w")
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver(var_list=[])  # not every variable, as the C++ default would be
    empty = tf.train.Saver(var_list=[], allow_empty=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert empty.save(sess, str(tmp_path / "m.ckpt")) is None
        empty.restore(sess, str(tmp_path / "m.ckpt"))
        assert sess.run(w) == 1.0
    assert not list(tmp_path.iterdir())
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            tf.train.Saver()


def test_softmax_cross_entropy_v1_does_not_backprop_into_labels():
    labels = tf.Variable([[0.3, 0.7]])
    logits = tf.Variable([[1.0, 0.0]])
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert tf.gradients(v1, labels) == [None]
    assert tf.gradients(v2, labels)[0] is not None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, ga, gb = sess.run([v1, v2, tf.gradients(v1, logits)[0], tf.gradients(v2, logits)[0]])
    np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(ga, gb)
    with pytest.raises(ValueError, match="named"):
        tf.nn.softmax_cross_entropy_with_logits(labels, logits)
