"""tf.zeros / tf.ones / tf.fill with a shape known only at run time, tf.zeros_like /
tf.ones_like exact (dtype kept, NaN and Inf inputs give 0 / 1, optimize), and tf.stack's
dtypes, as TF 1.15."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_zeros_ones_fill_take_a_run_time_shape():
    x = tf.placeholder(tf.float32, [None, 3])
    z = tf.zeros(tf.shape(x))
    o = tf.ones(tf.shape(x), dtype=tf.int64)
    f = tf.fill(tf.shape(x), 2.5)
    mixed = tf.zeros([tf.shape(x)[0], 2], dtype=tf.bool)
    assert z.shape.as_list() == [None, 3] and z.dtype == tf.float32
    assert o.dtype == tf.int64 and f.dtype == tf.float32
    feed = {x: np.ones((4, 3), np.float32)}
    zv, ov, fv, mv = _run([z, o, f, mixed], feed)
    np.testing.assert_array_equal(zv, np.zeros((4, 3), np.float32))
    np.testing.assert_array_equal(ov, np.ones((4, 3), np.int64))
    np.testing.assert_array_equal(fv, np.full((4, 3), 2.5, np.float32))
    assert mv.shape == (4, 2) and mv.dtype == np.bool_ and not mv.any()


def test_zeros_of_a_scalar_shape_tensor_and_static_shapes():
    n = tf.placeholder(tf.int32, [])
    assert _run(tf.zeros(n), {n: 3}).tolist() == [0.0, 0.0, 0.0]
    assert _run(tf.zeros(tf.constant([2, 2]))).shape == (2, 2)
    assert _run(tf.ones(tf.TensorShape([1, 2]))).tolist() == [[1.0, 1.0]]
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.zeros(tf.placeholder(tf.float32, [2]))


def test_zeros_like_and_ones_like_ignore_values_and_keep_dtypes():
    x = tf.constant([np.nan, np.inf, -np.inf, 2.0], dtype=tf.float64)
    z, o = tf.zeros_like(x), tf.ones_like(x)
    assert z.dtype == tf.float64 and o.dtype == tf.float64
    zv, ov = _run([z, o])
    np.testing.assert_array_equal(zv, [0.0] * 4)  # TF: zeros, not NaN * 0
    np.testing.assert_array_equal(ov, [1.0] * 4)
    p = tf.placeholder(tf.float32, [None])
    zd = tf.zeros_like(p, dtype=tf.int32)
    od = tf.ones_like(p)
    zopt = tf.zeros_like(p, optimize=False)
    b = tf.zeros_like(tf.placeholder(tf.bool, [None]))
    assert zd.dtype == tf.int32 and od.dtype == tf.float32 and b.dtype == tf.bool
    feed = {p: np.array([np.nan, 1.0, 2.0], np.float32)}
    zdv, odv, zov = _run([zd, od, zopt], feed)
    np.testing.assert_array_equal(zdv, [0, 0, 0])
    np.testing.assert_array_equal(odv, [1, 1, 1])
    np.testing.assert_array_equal(zov, [0, 0, 0])
    # optimize with a static shape: a constant that does not read the input.
    assert tf.zeros_like(x).op.inputs == [] or tf.zeros_like(x).op.type == "Const"


def test_stack_dtypes_as_tf():
    x64 = tf.constant([1, 2], dtype=tf.int64)
    s = tf.stack([x64, [3, 4]])
    assert s.dtype == tf.int64
    np.testing.assert_array_equal(_run(s), [[1, 2], [3, 4]])
    f64 = tf.constant(1.5, dtype=tf.float64)
    assert tf.stack([2, f64]).dtype == tf.float64  # a Python int takes the tensor's dtype
    assert tf.stack([1, 2.0]).dtype == tf.float32  # no tensor: one value, float32
    np.testing.assert_array_equal(_run(tf.stack([1, 2.5])), [1.0, 2.5])
    assert tf.stack([1, 2]).dtype == tf.int32
    with pytest.raises(TypeError):
        tf.stack([tf.constant(1), 2.5])  # 2.5 is no int32 (TF raises too)
    with pytest.raises(TypeError, match="cast them first"):
        tf.stack([tf.constant(1), tf.constant(2.0)])
    with pytest.raises(ValueError, match="not in"):
        tf.stack([tf.constant([1.0])], axis=3)


def test_convert_to_tensor_packs_lists_holding_tensors():
    n = tf.placeholder(tf.int32, [])
    packed = tf.convert_to_tensor([n, 3], dtype=tf.int32)
    assert packed.dtype == tf.int32
    assert _run(packed, {n: 2}).tolist() == [2, 3]
    nested = tf.convert_to_tensor([[n, 1], [2, 3]])
    assert _run(nested, {n: 5}).tolist() == [[5, 1], [2, 3]]
    with pytest.raises(ValueError, match="requested dtype int64"):
        tf.convert_to_tensor([n, 3], dtype=tf.int64)


def test_gradients_pass_run_time_shaped_fills():
    """A shape carries no gradient: x + tf.zeros(tf.shape(x)) differentiates as x (it was
    an error naming FillDynamic), and a computed fill value gets the summed gradient."""
    x = tf.placeholder(tf.float32, [None, 2])
    feed = {x: np.ones((3, 2), np.float32)}
    for y in (x + tf.zeros(tf.shape(x)), x * tf.ones_like(x), x * tf.fill(tf.shape(x), 1.0)):
        g = tf.gradients(tf.reduce_sum(y), x)[0]
        np.testing.assert_array_equal(_run(g, feed), np.ones((3, 2)))
    v = tf.Variable(2.0)
    filled = tf.fill(tf.shape(x), v * 1.0)
    assert filled.shape.as_list() == [None, 2]
    gv = tf.gradients(tf.reduce_sum(filled), v)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(gv, feed) == 6.0  # 3 * 2 elements
        np.testing.assert_array_equal(sess.run(filled, feed), np.full((3, 2), 2.0))
