"""TF 1.15's selection and clipping functions: tf.nn.top_k / tf.math.top_k, the
one-argument tf.where, tf.sequence_mask, tf.boolean_mask and tf.clip_by_norm. Expected
values are TF's documented examples or worked out by hand from TF's formulas."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_top_k_largest_first_ties_by_lower_index():
    x = tf.constant([[1., 3., 2., 3.], [5., 4., 6., 0.]])
    top = tf.nn.top_k(x, k=2)
    assert top._fields == ("values", "indices")
    assert top.values.shape.as_list() == [2, 2]
    assert top.indices.dtype == tf.int32
    k = tf.placeholder(tf.int32, [])
    fed = tf.math.top_k(x, k)
    with tf.Session() as sess:
        values, indices = sess.run(top)
        np.testing.assert_array_equal(values, [[3., 3.], [6., 5.]])
        np.testing.assert_array_equal(indices, [[1, 3], [2, 0]])
        values, indices = sess.run(fed, {k: 3})
        np.testing.assert_array_equal(indices, [[1, 3, 2], [2, 0, 1]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="at least k = 5 columns"):
            sess.run(fed, {k: 5})
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least k = 7 columns"):
        tf.nn.top_k(x, 7)


def test_sort_and_argsort_as_documented():
    # TF 1.15's docstrings: sort([1, 10, 26.7, 2.8, 2.5, 0]) and argsort of the same.
    v = tf.constant([1, 10, 26.7, 2.8, 2.5, 0])
    m = tf.constant([[3, 1, 2], [1, 3, 3]])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(tf.sort(v)), [0, 1, 2.5, 2.8, 10, 26.7], rtol=1e-6)
        np.testing.assert_allclose(sess.run(tf.sort(v, direction="DESCENDING")),
                                   [26.7, 10, 2.8, 2.5, 1, 0], rtol=1e-6)
        np.testing.assert_array_equal(sess.run(tf.argsort(v)), [5, 0, 4, 3, 1, 2])
        # Along axis 0 (a transpose around top_k); ties keep the lower index first.
        np.testing.assert_array_equal(sess.run(tf.sort(m, axis=0)), [[1, 1, 2], [3, 3, 3]])
        np.testing.assert_array_equal(sess.run(tf.argsort(m, axis=0)), [[1, 0, 0], [0, 1, 1]])
        np.testing.assert_array_equal(sess.run(tf.argsort(m[1], direction="DESCENDING")),
                                      [1, 2, 0])
        x = tf.placeholder(tf.float32, [None])
        np.testing.assert_array_equal(sess.run(tf.argsort(x), {x: [2., -1., 0.]}), [1, 2, 0])
    with pytest.raises(ValueError, match="should be one of"):
        tf.sort(v, direction="UP")
    with pytest.raises(ValueError, match="axis must be a constant scalar"):
        tf.sort(v, axis=tf.placeholder(tf.int32, []))


def test_unique_as_documented():
    # TF 1.15's docstring: x = [1, 1, 2, 4, 4, 4, 7, 8, 8].
    y, idx = tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    assert idx.dtype == tf.int32
    words = tf.unique(tf.constant(["b", "a", "b"]), out_idx=tf.int64)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [1, 2, 4, 7, 8])
        np.testing.assert_array_equal(sess.run(idx), [0, 0, 1, 2, 2, 2, 3, 4, 4])
        assert list(sess.run(words.y)) == [b"b", b"a"]
        np.testing.assert_array_equal(sess.run(words.idx), [0, 1, 0])


def test_top_k_gradient_scatters_into_the_input():
    x = tf.constant([0.1, 0.9, 0.5, 0.3], tf.float64)
    values = tf.nn.top_k(x, 2).values
    (dx,) = tf.gradients(values * tf.constant([10., 20.], tf.float64), x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(dx), [0., 10., 20., 0.])


def test_where_with_one_argument_gives_coordinates():
    # TF 1.15's docstring: where([[True, False], [True, False]]) = [[0, 0], [1, 0]].
    w = tf.where([[True, False], [True, False]])
    assert w.dtype == tf.int64
    assert w.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(w), [[0, 0], [1, 0]])
        np.testing.assert_array_equal(sess.run(tf.where([True, False], [1, 2], [3, 4])), [1, 4])
    with pytest.raises(ValueError, match="both be non-None or both be None"):
        tf.where([True], [1])


def test_sequence_mask_as_documented():
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.sequence_mask([1, 3, 2], 5)), [
            [True, False, False, False, False],
            [True, True, True, False, False],
            [True, True, False, False, False]])
        # maxlen defaults to max(lengths); lengths of any rank.
        np.testing.assert_array_equal(sess.run(tf.sequence_mask([[1, 3], [2, 0]])), [
            [[True, False, False], [True, True, True]],
            [[True, True, False], [False, False, False]]])
        lengths = tf.placeholder(tf.int64, [None])
        maxlen = tf.placeholder(tf.int32, [])
        mask = tf.sequence_mask(lengths, maxlen, dtype=tf.float32)
        assert mask.dtype == tf.float32
        np.testing.assert_array_equal(sess.run(mask, {lengths: [2, 0], maxlen: 3}),
                                      [[1., 1., 0.], [0., 0., 0.]])
        # TF 1.15 takes maxlen = max(max(lengths), 0): no columns for empty or negative ones.
        empty = tf.placeholder(tf.int32, [None])
        assert sess.run(tf.sequence_mask(empty), {empty: np.zeros([0], np.int32)}).shape == (0, 0)
        assert sess.run(tf.sequence_mask([-1, -2])).shape == (2, 0)
    with pytest.raises(TypeError, match="lengths must be integers"):
        tf.sequence_mask([1.5])


def test_boolean_mask_as_documented():
    t = tf.constant([[1, 2], [3, 4], [5, 6]])
    with tf.Session() as sess:
        np.testing.assert_array_equal(
            sess.run(tf.boolean_mask([0, 1, 2, 3], [True, False, True, False])), [0, 2])
        np.testing.assert_array_equal(sess.run(tf.boolean_mask(t, [True, False, True])),
                                      [[1, 2], [5, 6]])
        np.testing.assert_array_equal(sess.run(tf.boolean_mask(t, [False, True], axis=1)),
                                      [[2], [4], [6]])
        # A rank-2 mask over dims [1, 3) of a [2, 2, 2, 1] tensor: shape [2, num_true, 1].
        cube = tf.reshape(tf.range(8), [2, 2, 2, 1])
        two = tf.boolean_mask(cube, [[True, False], [False, True]], axis=1)
        np.testing.assert_array_equal(sess.run(two), [[[0], [3]], [[4], [7]]])
        # Unknown batch dim and a mask fed at run time.
        x = tf.placeholder(tf.float32, [None, 3, 2])
        m = tf.placeholder(tf.bool, [3])
        picked = tf.boolean_mask(x, m, axis=1)
        xv = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
        got = sess.run(picked, {x: xv, m: [False, True, True]})
        np.testing.assert_array_equal(got, xv[:, 1:, :])
        assert sess.run(picked, {x: xv, m: [False] * 3}).shape == (2, 0, 2)
    with pytest.raises(ValueError, match="incompatible"):
        tf.boolean_mask(t, [True, False])
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        tf.boolean_mask(t, True)
    with pytest.raises(TypeError, match="mask must be bool"):
        tf.boolean_mask(t, [1, 0, 1])


def test_boolean_mask_gradient_lands_on_the_kept_rows():
    v = tf.constant([[1., 2.], [3., 4.], [5., 6.]])
    kept = tf.boolean_mask(v, [True, False, True])
    (dv,) = tf.gradients(kept * tf.constant([[1., 2.], [3., 4.]]), v)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(dv)),
                                      [[1., 2.], [0., 0.], [3., 4.]])
    # Along axis 1 (columns 0 and 2 kept), and through a dynamic reshape (unknown batch).
    w = tf.constant([[1., 2., 3.], [4., 5., 6.]])
    (dw,) = tf.gradients(tf.boolean_mask(w, [True, False, True], axis=1) *
                         tf.constant([[1., 2.], [3., 4.]]), w)
    x = tf.placeholder(tf.float32, [None, 3, 2])
    m = tf.placeholder(tf.bool, [3])
    (dx,) = tf.gradients(tf.reduce_sum(tf.boolean_mask(x, m, axis=1)), x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(dw), [[1., 0., 2.], [3., 0., 4.]])
        got = sess.run(dx, {x: np.ones((2, 3, 2)), m: [True, False, True]})
        np.testing.assert_array_equal(got, [[[1., 1.], [0., 0.], [1., 1.]]] * 2)


def test_clip_by_norm_of_a_sparse_gradient_stays_sparse():
    # TF1's pattern: clip every gradient of compute_gradients, embeddings' included.
    v = tf.Variable(tf.ones([4, 2]))
    loss = tf.reduce_sum(tf.gather(v, [1, 1, 3]) * 3.0)
    opt = tf.train.GradientDescentOptimizer(1.0)
    ((g, var),) = opt.compute_gradients(loss)
    clipped = tf.clip_by_norm(g, 1.0)
    assert type(clipped) is type(g)
    train = opt.apply_gradients([(clipped, var)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        # values: three rows of 3s, norm sqrt(54); each entry becomes 3 / sqrt(54). Row 1 is
        # gathered twice, so it moves twice as far as row 3.
        step = 3 / np.sqrt(54)
        np.testing.assert_allclose(sess.run(v), [[1, 1], [1 - 2 * step] * 2, [1, 1],
                                                 [1 - step] * 2], rtol=1e-6)


def test_clip_by_global_norm_keeps_sparse_gradients_sparse():
    v = tf.Variable(tf.ones([4, 2]))
    w = tf.Variable([3.0, 4.0])
    loss = tf.reduce_sum(tf.gather(v, [1, 1, 3]) * 3.0) + tf.reduce_sum(w * w) / 2
    opt = tf.train.GradientDescentOptimizer(1.0)
    grads_and_vars = opt.compute_gradients(loss)
    grads = [g for g, _ in grads_and_vars]
    clipped, norm = tf.clip_by_global_norm(grads, 1.0)
    assert [type(c) for c in clipped] == [type(g) for g in grads]
    train = opt.apply_gradients(zip(clipped, [var for _, var in grads_and_vars]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # The global norm reads the sparse gradient's values (six 3s) and w's gradient
        # (w itself): sqrt(54 + 25) = sqrt(79).
        np.testing.assert_allclose(sess.run(norm), np.sqrt(79), rtol=1e-6)
        sess.run(train)
        scale = 1 / np.sqrt(79)
        np.testing.assert_allclose(sess.run(w), [3 - 3 * scale, 4 - 4 * scale], rtol=1e-6)
        np.testing.assert_allclose(sess.run(v)[3], [1 - 3 * scale] * 2, rtol=1e-6)


def test_clip_by_norm_values():
    t = tf.constant([[1., 2., 3.], [4., 5., 6.]], tf.float64)
    with tf.Session() as sess:
        # The whole tensor: norm sqrt(91) > 2, so t * 2 / sqrt(91).
        np.testing.assert_allclose(sess.run(tf.clip_by_norm(t, 2.0)),
                                   np.array([[1, 2, 3], [4, 5, 6]]) * 2 / np.sqrt(91))
        # Per row: norms sqrt(14) and sqrt(77); a clip of 5 changes only the second.
        np.testing.assert_allclose(sess.run(tf.clip_by_norm(t, 5.0, axes=[1])),
                                   [[1, 2, 3], list(np.array([4, 5, 6]) * 5 / np.sqrt(77))])
        np.testing.assert_array_equal(sess.run(tf.clip_by_norm(t, 100.0)), sess.run(t))
        # TF's docstring example (float32).
        np.testing.assert_allclose(
            sess.run(tf.clip_by_norm(tf.constant([[1., 2., 3., 4., 5.]]), 2.0)),
            [[0.26967996, 0.5393599, 0.80903983, 1.0787199, 1.3483998]], rtol=1e-6)
        np.testing.assert_array_equal(sess.run(tf.clip_by_norm(tf.zeros([2]), 1.0)), [0., 0.])
    with pytest.raises(ValueError, match="would broadcast"):
        tf.clip_by_norm(tf.constant([1., 2.]), tf.constant([[1.], [2.]]))


@pytest.mark.parametrize("axes", [None, [1]])
def test_clip_by_norm_gradient_matches_central_differences(axes, numeric_gradient):
    x = tf.placeholder(tf.float64, [2, 3])
    weights = tf.constant([[0.3, -1.2, 0.7], [2.0, 0.1, -0.4]], tf.float64)
    loss = tf.reduce_sum(tf.clip_by_norm(x, 1.5, axes=axes) * weights)
    (dx,) = tf.gradients(loss, x)
    x0 = np.array([[1.2, -0.5, 0.9], [0.1, 0.05, -0.2]])  # row 0 is clipped, row 1 is not
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dx, {x: x0}), numeric_gradient(sess, loss, x, x0),
                                   atol=1e-7)
        # At zero the norm's where() keeps the gradient finite: t * c / c there, slope 1.
        np.testing.assert_allclose(sess.run(dx, {x: np.zeros((2, 3))}), sess.run(weights))


def test_an_estimator_with_top_k_sequence_mask_and_clip_by_norm(tmp_path):
    """A TF1 model_fn using the new functions end to end: a masked loss over padded
    sequences (sequence_mask, boolean_mask), clipped gradients (clip_by_norm), top-2 class
    predictions (top_k, einsum for the logits); trained, predicted, exported and served."""
    rng = np.random.RandomState(0)
    tokens = rng.randn(64, 5, 3).astype(np.float32)
    lengths = rng.randint(1, 6, size=64).astype(np.int32)
    labels = rng.randint(0, 4, size=(64, 5)).astype(np.int32)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [3, 4], initializer=tf.glorot_uniform_initializer(seed=1))
        logits = tf.einsum("bti,ic->btc", features["tokens"], w)
        top = tf.nn.top_k(logits, k=2)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"best": top.indices,
                                                                 "scores": top.values})
        mask = tf.sequence_mask(features["lengths"], maxlen=5)
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.boolean_mask(labels, mask), logits=tf.boolean_mask(logits, mask))
        loss = tf.reduce_mean(losses)
        opt = tf.train.GradientDescentOptimizer(0.1)
        grads = [(tf.clip_by_norm(g, 1.0), v) for g, v in opt.compute_gradients(loss)]
        train_op = opt.apply_gradients(grads, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "model"))
    train_fn = tf.estimator.inputs.numpy_input_fn({"tokens": tokens, "lengths": lengths}, labels,
                                                  batch_size=16, num_epochs=None, shuffle=True)
    est.train(train_fn, steps=5)
    w = est.get_variable_value("w")
    predictions = list(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"tokens": tokens[:3], "lengths": lengths[:3]}, shuffle=False)))
    logits = np.einsum("bti,ic->btc", tokens[:3], w)
    want = np.argsort(-logits, axis=-1, kind="stable")[..., :2]
    np.testing.assert_array_equal(np.stack([p["best"] for p in predictions]), want)

    def serving_input_fn():
        inp = tf.placeholder(tf.float32, [None, 5, 3], name="tokens")
        return tf.estimator.export.ServingInputReceiver({"tokens": inp}, {"tokens": inp})

    path = est.export_saved_model(str(tmp_path / "export"), serving_input_fn)
    served = tf.contrib.predictor.from_saved_model(path)({"tokens": tokens[:3]})
    np.testing.assert_array_equal(served["best"], want)
    np.testing.assert_allclose(served["scores"], np.take_along_axis(logits, want, -1), rtol=1e-5)


def test_gather_nd_batch_dims_as_documented(numeric_gradient):
    # TF's examples: params [2, 2, 2] of a0 b0 c0 d0 / a1 b1 c1 d1 as 0..7, batch_dims 1.
    params = tf.constant(np.arange(8.).reshape(2, 2, 2))
    with tf.Session() as sess:
        rows, nested, scalars = sess.run([
            tf.gather_nd(params, [[1], [0]], batch_dims=1),           # [[c0, d0], [a1, b1]]
            tf.gather_nd(params, [[[1]], [[0]]], batch_dims=1),       # [[[c0, d0]], [[a1, b1]]]
            tf.gather_nd(params, tf.constant([[[1, 0]], [[0, 1]]], tf.int64),
                         batch_dims=1)])                              # [[c0], [b1]]
    np.testing.assert_array_equal(rows, [[2, 3], [4, 5]])
    np.testing.assert_array_equal(nested, [[[2, 3]], [[4, 5]]])
    np.testing.assert_array_equal(scalars, [[2], [5]])
    # Two batch dims, a batch size fed at run time, and the gradient (a scatter).
    p0 = np.arange(24.).reshape(2, 3, 4) / 10
    p = tf.placeholder(tf.float64, [None, 3, 4])
    idx = tf.placeholder(tf.int32, [None, 3, 1])
    y = tf.gather_nd(p, idx, batch_dims=2)
    i0 = np.array([[[3], [0], [1]], [[2], [2], [0]]], np.int32)
    loss = tf.reduce_sum(y * y)
    (dp,) = tf.gradients(loss, p)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {p: p0, idx: i0}),
                                   np.take_along_axis(p0, i0, axis=2)[..., 0])
        got = sess.run(dp, {p: p0, idx: i0})
    want = np.zeros_like(p0)
    for b in range(2):
        for r in range(3):
            want[b, r, i0[b, r, 0]] += 2 * p0[b, r, i0[b, r, 0]]
    np.testing.assert_allclose(got, want)
    with pytest.raises(ValueError, match="batch dim 0 of params"):
        tf.gather_nd(tf.zeros([3, 2]), tf.zeros([2, 1], tf.int32), batch_dims=1)
