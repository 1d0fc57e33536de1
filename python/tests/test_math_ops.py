"""TF 1.15's math composites (python/loom/compat/v1/_math_ops.py): reduce_logsumexp, norm,
count_nonzero, reduce_variance / reduce_std, tensordot, log_sigmoid, nn.swish, nn.selu,
eye, linalg.diag_part / trace, matrix_transpose, reverse, broadcast_to, linspace. Values
from TF's docstrings or worked out by hand; gradients against central differences."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_reduce_logsumexp_as_documented_and_without_overflow():
    # TF's docstring: x = [[0, 0, 0], [0, 0, 0]].
    x = tf.constant([[0., 0., 0.], [0., 0., 0.]])
    np.testing.assert_allclose(_run(tf.reduce_logsumexp(x)), np.log(6), rtol=1e-6)
    np.testing.assert_allclose(_run(tf.reduce_logsumexp(x, 0)), np.log([2, 2, 2]), rtol=1e-6)
    np.testing.assert_allclose(_run(tf.math.reduce_logsumexp(x, 1, keepdims=True)),
                               np.log([[3], [3]]), rtol=1e-6)
    # 1000 + log(1 + e^-1): exp(1000) alone would overflow.
    big = tf.constant([1000., 999.], tf.float64)
    np.testing.assert_allclose(_run(tf.reduce_logsumexp(big)), 1000 + np.log1p(np.exp(-1)))
    # d/dx logsumexp = softmax(x); the shift carries no gradient.
    (g,) = tf.gradients(tf.reduce_logsumexp(big), big)
    np.testing.assert_allclose(_run(g), np.exp([0, -1]) / (1 + np.exp(-1)))


def test_norm_vectors_and_matrices():
    x = tf.constant([[3., -4.], [1., 2.]])
    np.testing.assert_allclose(_run(tf.norm(x)), np.sqrt(30), rtol=1e-6)
    np.testing.assert_allclose(_run(tf.norm(x, axis=1)), [5., np.sqrt(5)], rtol=1e-6)
    np.testing.assert_allclose(_run(tf.norm(x, ord=1, axis=0)), [4., 6.], rtol=1e-6)
    np.testing.assert_allclose(_run(tf.norm(x, ord=np.inf, axis=1, keepdims=True)),
                               [[4.], [2.]], rtol=1e-6)
    np.testing.assert_allclose(_run(tf.norm(x, ord=3, axis=1)), [91 ** (1 / 3), 9 ** (1 / 3)],
                               rtol=1e-6)
    # Matrix norms: 1 is the largest column sum of |x| (6), inf the largest row sum (7).
    np.testing.assert_allclose(_run(tf.linalg.norm(x, ord=1, axis=[0, 1])), 6., rtol=1e-6)
    np.testing.assert_allclose(_run(tf.norm(x, ord=np.inf, axis=[0, 1])), 7., rtol=1e-6)
    np.testing.assert_allclose(_run(tf.norm(x, ord="fro", axis=[0, 1])), np.sqrt(30), rtol=1e-6)
    with pytest.raises(ValueError, match="spectral norm"):
        tf.norm(x, ord=2, axis=[0, 1])


def test_count_nonzero_variance_std():
    x = tf.constant([[0, 1, 0], [1, 1, 0]])
    assert _run(tf.count_nonzero(x)) == 3
    np.testing.assert_array_equal(_run(tf.count_nonzero(x, axis=0)), [1, 2, 0])
    assert tf.count_nonzero(x).dtype == tf.int64
    assert tf.math.count_nonzero(x, dtype=tf.int32).dtype == tf.int32
    assert _run(tf.count_nonzero(tf.constant([True, False, True]))) == 2
    v = tf.constant([[1., 2.], [3., 4.]])
    np.testing.assert_allclose(_run(tf.math.reduce_variance(v)), 1.25, rtol=1e-6)
    np.testing.assert_allclose(_run(tf.math.reduce_std(v, axis=0)), [1., 1.], rtol=1e-6)


def test_tensordot_as_matmul_and_over_several_axes():
    a = np.arange(6.).reshape(2, 3)
    b = np.arange(12.).reshape(3, 4)
    np.testing.assert_allclose(_run(tf.tensordot(tf.constant(a), tf.constant(b), 1)), a @ b)
    np.testing.assert_allclose(_run(tf.tensordot(tf.constant(a), tf.constant(a), [[1], [1]])),
                               a @ a.T)
    c = np.arange(24.).reshape(2, 3, 4)
    d = np.arange(12.).reshape(4, 3)
    got = _run(tf.linalg.tensordot(tf.constant(c), tf.constant(d), [[1, 2], [1, 0]]))
    np.testing.assert_allclose(got, np.tensordot(c, d, ([1, 2], [1, 0])))
    np.testing.assert_allclose(_run(tf.tensordot(tf.constant(a[0]), tf.constant(b[0]), 0)),
                               np.outer(a[0], b[0]))
    with pytest.raises(ValueError, match="Different number of contraction axes"):
        tf.tensordot(tf.constant(a), tf.constant(b), [[1], [0, 1]])


def test_activations():
    x = np.array([-2., 0.5, 3.])
    t = tf.constant(x)
    np.testing.assert_allclose(_run(tf.math.log_sigmoid(t)), -np.log1p(np.exp(-x)))
    np.testing.assert_allclose(_run(tf.nn.swish(t)), x / (1 + np.exp(-x)))
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    np.testing.assert_allclose(_run(tf.nn.selu(t)),
                               scale * np.where(x > 0, x, alpha * (np.exp(x) - 1)))


def test_gradients_of_the_composites(numeric_gradient):
    x = tf.placeholder(tf.float64, [2, 3])
    w = tf.constant(np.random.RandomState(0).randn(2, 3))
    loss = (tf.reduce_sum(tf.nn.selu(x) * w) + tf.reduce_sum(tf.nn.swish(x) * w) +
            tf.reduce_sum(tf.math.log_sigmoid(x)) + tf.norm(x) + tf.reduce_logsumexp(x) +
            tf.reduce_sum(tf.reverse(x, [1]) * w) + tf.math.reduce_std(x))
    (dx,) = tf.gradients(loss, x)
    x0 = np.array([[0.3, -1.2, 0.8], [-0.4, 1.5, 0.1]])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dx, {x: x0}), numeric_gradient(sess, loss, x, x0),
                                   atol=1e-6)


def test_eye_diag_trace_transpose():
    np.testing.assert_array_equal(_run(tf.eye(2)), [[1., 0.], [0., 1.]])
    np.testing.assert_array_equal(_run(tf.eye(2, num_columns=3)), [[1., 0., 0.], [0., 1., 0.]])
    assert _run(tf.eye(2, batch_shape=[3])).shape == (3, 2, 2)
    assert tf.linalg.eye(2, dtype=tf.int32).dtype == tf.int32
    m = tf.constant([[1., 2., 3.], [4., 5., 6.]])
    np.testing.assert_array_equal(_run(tf.linalg.diag_part(m)), [1., 5.])
    np.testing.assert_array_equal(_run(tf.trace(tf.constant([[1., 2.], [3., 4.]]))), 5.)
    np.testing.assert_array_equal(_run(tf.linalg.trace(tf.reshape(tf.range(8.), [2, 2, 2]))),
                                  [3., 11.])
    np.testing.assert_array_equal(_run(tf.matrix_transpose(m)), [[1., 4.], [2., 5.], [3., 6.]])
    assert tf.linalg.matrix_transpose(tf.zeros([5, 2, 3])).shape.as_list() == [5, 3, 2]


def test_reverse_broadcast_to_linspace():
    t = tf.constant([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(_run(tf.reverse(t, [1])), [[3, 2, 1], [6, 5, 4]])
    np.testing.assert_array_equal(_run(tf.reverse(t, [0, -1])), [[6, 5, 4], [3, 2, 1]])
    np.testing.assert_array_equal(_run(tf.broadcast_to(tf.constant([1, 2, 3]), [2, 3])),
                                  [[1, 2, 3], [1, 2, 3]])
    # TF's docstring: linspace(10.0, 12.0, 3) = [10.0, 11.0, 12.0].
    np.testing.assert_allclose(_run(tf.linspace(10.0, 12.0, 3)), [10., 11., 12.])
    np.testing.assert_allclose(_run(tf.lin_space(0.0, 1.0, 1)), [0.])
    v = tf.constant([1., 2.])
    (g,) = tf.gradients(tf.reduce_sum(tf.broadcast_to(v, [3, 2])), v)
    np.testing.assert_array_equal(_run(g), [3., 3.])


def test_gather_nd_scatter_nd_segment_sums_as_documented():
    # TF 1.15's docstrings.
    params = tf.constant([["a", "b"], ["c", "d"]])
    with tf.Session() as sess:
        assert list(sess.run(tf.gather_nd(params, [[0, 0], [1, 1]]))) == [b"a", b"d"]
        assert sess.run(tf.gather_nd(params, [[1], [0]])).tolist() == [[b"c", b"d"], [b"a", b"b"]]
        np.testing.assert_array_equal(
            sess.run(tf.scatter_nd([[4], [3], [1], [7]], [9, 10, 11, 12], [8])),
            [0, 11, 0, 10, 9, 0, 0, 12])
        c = tf.constant([[1, 2, 3, 4], [5, 6, 7, 8], [4, 3, 2, 1]])
        np.testing.assert_array_equal(sess.run(tf.math.unsorted_segment_sum(c, [0, 1, 0], 2)),
                                      [[5, 5, 5, 5], [5, 6, 7, 8]])
        np.testing.assert_array_equal(
            sess.run(tf.math.segment_sum(tf.constant([[1, 2, 3, 4], [-1, -2, -3, -4],
                                                      [5, 6, 7, 8]]), [0, 0, 1])),
            [[0, 0, 0, 0], [5, 6, 7, 8]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="outside"):
            sess.run(tf.gather_nd(c, [[3, 0]]))
    # batch_dims=1: row i picks params[i][indices[i]] (strings too).
    assert _run(tf.gather_nd(params, [[1], [0]], batch_dims=1)).tolist() == [b"b", b"c"]
    # Gradients: gather_nd's scatters back, unsorted_segment_sum's gathers.
    v = tf.constant([[1., 2.], [3., 4.]])
    (dv,) = tf.gradients(tf.reduce_sum(tf.gather_nd(v, [[0, 1], [0, 1], [1, 0]])), v)
    (ds,) = tf.gradients(tf.reduce_sum(tf.math.unsorted_segment_sum(v, [1, 1], 3) *
                                       tf.constant([[1.], [10.], [100.]])), v)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(dv), [[0., 2.], [1., 0.]])
        np.testing.assert_array_equal(sess.run(ds), [[10., 10.], [10., 10.]])


def test_segment_mean_bincount_meshgrid_diag_band_part():
    c = tf.constant([[1., 2., 3., 4.], [5., 6., 7., 8.], [4., 3., 2., 1.]])
    with tf.Session() as sess:
        np.testing.assert_allclose(
            sess.run(tf.math.unsorted_segment_mean(c, [0, 1, 0], 3)),
            [[2.5, 2.5, 2.5, 2.5], [5., 6., 7., 8.], [0., 0., 0., 0.]])
        np.testing.assert_array_equal(sess.run(tf.math.bincount([1, 1, 2, 5])),
                                      [0, 2, 1, 0, 0, 1])
        assert sess.run(tf.math.bincount([1, 1, 2, 5], minlength=8)).shape == (8,)
        np.testing.assert_array_equal(sess.run(tf.math.bincount([1, 1, 2, 5], maxlength=3)),
                                      [0, 2, 1])
        np.testing.assert_allclose(
            sess.run(tf.math.bincount([1, 1, 2, 5], weights=[1., 2., 3., 4.])),
            [0., 3., 3., 0., 0., 4.])
        # TF's docstring: meshgrid([1, 2, 3], [4, 5, 6]).
        X, Y = sess.run(tf.meshgrid([1, 2, 3], [4, 5, 6]))
        np.testing.assert_array_equal(X, [[1, 2, 3]] * 3)
        np.testing.assert_array_equal(Y, [[4, 4, 4], [5, 5, 5], [6, 6, 6]])
        X, Y, Z = sess.run(tf.meshgrid([1, 2], [3, 4, 5], [6], indexing="ij"))
        assert X.shape == Y.shape == Z.shape == (2, 3, 1)
        np.testing.assert_array_equal(Y[:, :, 0], [[3, 4, 5], [3, 4, 5]])
        np.testing.assert_array_equal(sess.run(tf.diag([1., 2.])), [[1., 0.], [0., 2.]])
        np.testing.assert_array_equal(sess.run(tf.linalg.diag([[1, 2], [3, 4]])),
                                      [[[1, 0], [0, 2]], [[3, 0], [0, 4]]])
        np.testing.assert_array_equal(sess.run(tf.diag_part([[1, 2], [3, 4]])), [1, 4])
        # TF's docstring for band_part.
        x = tf.constant([[0, 1, 2, 3], [-1, 0, 1, 2], [-2, -1, 0, 1], [-3, -2, -1, 0]])
        np.testing.assert_array_equal(sess.run(tf.linalg.band_part(x, 1, -1)), [
            [0, 1, 2, 3], [-1, 0, 1, 2], [0, -1, 0, 1], [0, 0, -1, 0]])
        np.testing.assert_array_equal(sess.run(tf.matrix_band_part(x, 2, 1)), [
            [0, 1, 0, 0], [-1, 0, 1, 0], [-2, -1, 0, 1], [0, -2, -1, 0]])
    with pytest.raises(ValueError, match="takes a vector"):
        tf.diag([[1., 2.]])


def test_nn_composites(numeric_gradient):
    x = np.array([[1., 2.], [3., 6.]])
    with tf.Session() as sess:
        # (x - mean) / sqrt(var + eps) * scale + offset, by hand with eps = 0.
        f64 = [tf.constant(np.array(v)) for v in ([2., 4.], [1., 4.], [0.5, 0.], [2., 1.])]
        got = sess.run(tf.nn.batch_normalization(tf.constant(x), *f64, 0.0))
        np.testing.assert_allclose(got, [[-1.5, -1.], [2.5, 1.]])
        got = sess.run(tf.nn.batch_normalization(tf.constant(x), 2., 4., None, None, 0.0))
        np.testing.assert_allclose(got, (x - 2.) / 2.)
        # z * -log(sigmoid(x)) * q + (1 - z) * -log(1 - sigmoid(x)), TF's definition.
        z = np.array([[1., 0.], [0.5, 1.]])
        q = 3.0
        sig = 1 / (1 + np.exp(-x))
        want = z * -np.log(sig) * q + (1 - z) * -np.log(1 - sig)
        got = sess.run(tf.nn.weighted_cross_entropy_with_logits(
            labels=tf.constant(z), logits=tf.constant(x), pos_weight=q))
        np.testing.assert_allclose(got, want, rtol=1e-12)
        got = sess.run(tf.nn.weighted_cross_entropy_with_logits(
            targets=tf.constant(z), logits=tf.constant(x), pos_weight=q))
        np.testing.assert_allclose(got, want, rtol=1e-12)
        # conv1d: width 4, one channel, filter [1, -1] (a difference), stride 1, VALID.
        value = tf.constant([[[1.], [4.], [9.], [16.]]])
        filters = tf.constant([[[1.]], [[-1.]]])
        np.testing.assert_array_equal(sess.run(tf.nn.conv1d(value, filters, 1, "VALID")),
                                      [[[-3.], [-5.], [-7.]]])
        np.testing.assert_array_equal(
            sess.run(tf.nn.conv1d(value, filters, stride=2, padding="VALID")), [[[-3.], [-7.]]])
    with pytest.raises(ValueError, match="NWC"):
        tf.nn.conv1d(value, filters, 1, "VALID", data_format="NCW")
    # Gradients through conv1d and batch_normalization against central differences.
    v = tf.placeholder(tf.float64, [1, 5, 2])
    w = tf.constant(np.random.RandomState(0).randn(3, 2, 2))
    loss = tf.reduce_sum(tf.nn.conv1d(v, w, 1, "SAME") * tf.constant(np.arange(10.).reshape(1, 5, 2))) + \
        tf.reduce_sum(tf.nn.batch_normalization(v, 0.5, 2.0, 0.1, 3.0, 1e-3) ** 2)
    (dv,) = tf.gradients(loss, v)
    v0 = np.random.RandomState(1).randn(1, 5, 2)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dv, {v: v0}), numeric_gradient(sess, loss, v, v0),
                                   atol=1e-5)


def test_unique_with_counts():
    y, idx, count = tf.unique_with_counts([1, 1, 2, 4, 4, 4, 7, 8, 8])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [1, 2, 4, 7, 8])
        np.testing.assert_array_equal(sess.run(idx), [0, 0, 1, 2, 2, 2, 3, 4, 4])
        np.testing.assert_array_equal(sess.run(count), [2, 1, 3, 1, 2])


def test_lrn_by_hand_and_its_gradient(numeric_gradient):
    x = tf.constant([[[[1., 2., 3.]]]], tf.float64)
    # radius 1: sqr_sum = [1 + 4, 1 + 4 + 9, 4 + 9]; x / sqrt(1 + sqr_sum).
    got = _run(tf.nn.lrn(x, depth_radius=1, bias=1.0, alpha=1.0, beta=0.5))
    np.testing.assert_allclose(got.ravel(), [1 / np.sqrt(6), 2 / np.sqrt(15), 3 / np.sqrt(14)])
    v = tf.placeholder(tf.float64, [1, 2, 1, 4])
    loss = tf.reduce_sum(tf.nn.local_response_normalization(v, 2, 0.5, 0.3, 0.75) *
                         tf.constant(np.arange(8.).reshape(1, 2, 1, 4)))
    (dv,) = tf.gradients(loss, v)
    v0 = np.random.RandomState(2).randn(1, 2, 1, 4)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dv, {v: v0}), numeric_gradient(sess, loss, v, v0),
                                   atol=1e-6)


def test_transcendental_functions_by_hand():
    pi = np.pi
    with tf.Session() as sess:
        got = sess.run([tf.sin(tf.constant([0., pi / 2])), tf.cos(tf.constant(pi)),
                        tf.tan(tf.constant(pi / 4)), tf.math.asin(1.0), tf.acos(0.0),
                        tf.atan(tf.constant(1.0, tf.float64)), tf.sinh(0.0), tf.cosh(0.0),
                        tf.math.expm1(tf.constant(1e-10, tf.float64)), tf.math.erf(0.0),
                        tf.ceil([-1.5, 1.2])])
    np.testing.assert_allclose(got[0], [0., 1.], atol=1e-7)
    np.testing.assert_allclose(got[1:8], [-1., 1., pi / 2, pi / 2, pi / 4, 0., 1.], rtol=1e-6)
    assert got[8] == np.expm1(1e-10)
    assert got[9] == 0.
    np.testing.assert_array_equal(got[10], [-1., 2.])
    x = tf.constant([0.3, -0.2], tf.float64)
    (g,) = tf.gradients(tf.reduce_sum(tf.sin(x) + tf.math.erf(x)), x)
    np.testing.assert_allclose(_run(g), np.cos([0.3, -0.2]) +
                               2 / np.sqrt(pi) * np.exp(-np.square([0.3, -0.2])))


def test_elementwise_composites_by_hand():
    x = tf.constant([1., np.nan, np.inf, -np.inf, 0.])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.is_nan(x)), [False, True, False, False, False])
        np.testing.assert_array_equal(sess.run(tf.math.is_inf(x)), [False, False, True, True, False])
        np.testing.assert_array_equal(sess.run(tf.is_finite(x)), [True, False, False, False, True])
        np.testing.assert_array_equal(sess.run(tf.math.divide_no_nan([3., 2.], [0., 4.])), [0., 0.5])
        np.testing.assert_array_equal(sess.run(tf.math.multiply_no_nan([np.inf, 2.], [0., 3.])),
                                      [0., 6.])
        np.testing.assert_allclose(sess.run(tf.math.xlogy([0., 2.], [0., np.e])), [0., 2.])
        np.testing.assert_array_equal(sess.run(tf.math.xdivy([0., 3.], [0., 2.])), [0., 1.5])
        np.testing.assert_array_equal(sess.run(tf.math.reciprocal_no_nan([0., 4.])), [0., 0.25])
        np.testing.assert_array_equal(sess.run(tf.math.logical_xor([True, True, False],
                                                                   [True, False, False])),
                                      [False, True, False])
        np.testing.assert_allclose(sess.run(tf.nn.softsign([-3., 1.])), [-0.75, 0.5])
        np.testing.assert_array_equal(sess.run(tf.nn.crelu([[-1., 2.]])), [[0., 2., 1., 0.]])
        np.testing.assert_array_equal(sess.run(tf.math.rint([0.5, 1.5, -2.5])), [0., 2., -2.])
        # 2x^2 + 3x + 1 at x = 2: 15.
        np.testing.assert_array_equal(sess.run(tf.math.polyval([2., 3., 1.], tf.constant(2.))), 15.)
        np.testing.assert_allclose(sess.run(tf.math.reduce_euclidean_norm([[3., 4.], [0., 0.]], 1)),
                                   [5., 0.])
        # ||t|| / n = 5 / 2 > 1: scaled to average norm 1, t * 1 * 2 / 5.
        np.testing.assert_allclose(sess.run(tf.clip_by_average_norm(tf.constant([3., 4.]), 1.0)),
                                   [1.2, 1.6], rtol=1e-6)
        assert sess.run(tf.math.squared_difference(3., 5.)) == 4.
    # The no-nan divisions pass finite gradients where they return 0.
    y = tf.constant([0., 2.], tf.float64)
    (gy,) = tf.gradients(tf.reduce_sum(tf.math.divide_no_nan(tf.constant([1., 1.], tf.float64), y)), y)
    np.testing.assert_allclose(_run(gy), [0., -0.25])


def test_fused_batch_norm_training_and_inference(numeric_gradient):
    # Channel 0 holds 1 and 3 (mean 2, variance 1), channel 1 holds 2 and 6 (mean 4,
    # variance 4); the returned variance carries Bessel's correction n / (n - 1) = 2.
    x = tf.constant(np.array([1., 2., 3., 6.]).reshape(2, 1, 1, 2))
    scale = tf.constant(np.array([1., 2.]))
    offset = tf.constant(np.array([0., 1.]))
    y, mean, var = tf.nn.fused_batch_norm(x, scale, offset, epsilon=0.0)
    eps = 1.001e-5  # TF's smallest epsilon
    with tf.Session() as sess:
        got_y, got_mean, got_var = sess.run([y, mean, var])
        np.testing.assert_allclose(got_mean, [2., 4.])
        np.testing.assert_allclose(got_var, [2., 8.])
        want = np.array([[-1., -2.], [1., 2.]]) / np.sqrt(np.array([1., 4.]) + eps) * [1., 2.] + \
            [0., 1.]
        np.testing.assert_allclose(got_y.reshape(2, 2), want, rtol=1e-6)
        y2, m2, v2 = tf.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var,
                                            epsilon=0.01, is_training=False)
        np.testing.assert_allclose(
            sess.run(y2).reshape(2, 2),
            (np.array([[1., 2.], [3., 6.]]) - [2., 4.]) / np.sqrt([2.01, 8.01]) * [1., 2.] +
            [0., 1.], rtol=1e-6)
    with pytest.raises(ValueError, match="needs mean and variance"):
        tf.nn.fused_batch_norm(x, scale, offset, is_training=False)
    v = tf.placeholder(tf.float64, [2, 2, 1, 3])
    out = tf.nn.fused_batch_norm(v, tf.constant(np.array([1., 0.5, 2.])),
                                 tf.constant(np.zeros(3)))[0]
    loss = tf.reduce_sum(out * tf.constant(np.arange(12.).reshape(2, 2, 1, 3)))
    (dv,) = tf.gradients(loss, v)
    v0 = np.random.RandomState(4).randn(2, 2, 1, 3)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dv, {v: v0}), numeric_gradient(sess, loss, v, v0),
                                   atol=1e-5)


def test_cumprod_as_documented_and_its_gradient(numeric_gradient):
    # TF's docstring: cumprod([a, b, c]) = [a, a * b, a * b * c], exclusive [1, a, a * b],
    # reverse [a * b * c, b * c, c], both [b * c, c, 1].
    x = tf.constant([2., 3., 5.])
    got = _run([tf.cumprod(x), tf.math.cumprod(x, exclusive=True),
                tf.math.cumprod(x, reverse=True), tf.cumprod(x, exclusive=True, reverse=True),
                tf.cumprod(tf.constant([[1, 2], [3, 4]]), axis=1)])
    np.testing.assert_array_equal(got[0], [2, 6, 30])
    np.testing.assert_array_equal(got[1], [1, 2, 6])
    np.testing.assert_array_equal(got[2], [30, 15, 5])
    np.testing.assert_array_equal(got[3], [15, 5, 1])
    np.testing.assert_array_equal(got[4], [[1, 2], [3, 12]])
    v0 = np.array([[0.7, 1.3, 0.9], [1.1, 0.6, 1.4]])
    v = tf.placeholder(tf.float64, v0.shape)
    loss = tf.reduce_sum(tf.cumprod(v, axis=1, exclusive=True, reverse=True) * [[1., 2., 3.]])
    (dv,) = tf.gradients(loss, v)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dv, {v: v0}), numeric_gradient(sess, loss, v, v0),
                                   atol=1e-7)


def test_atan2_quadrants_broadcasting_and_gradient():
    y = tf.constant([[1.], [-1.]], tf.float64)
    x = tf.constant([1., -1., 0.], tf.float64)
    pi = np.pi
    np.testing.assert_allclose(_run(tf.atan2(y, x)), [[pi / 4, 3 * pi / 4, pi / 2],
                                                      [-pi / 4, -3 * pi / 4, -pi / 2]])
    assert _run(tf.math.atan2(0.0, 2.0)) == 0.0
    # d/dy atan2 = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2), summed over the broadcast:
    # y = [[3], [1]], x = [4, 2].
    y = tf.constant([[3.], [1.]], tf.float64)
    x = tf.constant([4., 2.], tf.float64)
    dy, dx = tf.gradients(tf.reduce_sum(tf.atan2(y, x)), [y, x])
    np.testing.assert_allclose(_run(dy), [[4 / 25 + 2 / 13], [4 / 17 + 2 / 5]])
    np.testing.assert_allclose(_run(dx), [-(3 / 25 + 1 / 17), -(3 / 13 + 1 / 5)])
