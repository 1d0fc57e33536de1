"""tf.cond, tf.case, tf.switch_case and smart_cond as TF1 programs use them: a learning-rate
warmup under an Estimator, an is_training placeholder for dropout, side effects only in the
branch taken, nested structures, gradients and an optimizer through a cond."""
import numpy as np
import pytest

import loom.compat.v1 as tf


def _session(graph):
    sess = tf.Session(graph=graph)
    sess.run(tf.global_variables_initializer())
    return sess


def test_cond_runs_only_the_branch_taken():
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.bool, [])
        x = tf.placeholder(tf.float32, [])
        hits = tf.Variable(0.0, name="hits")
        y = tf.cond(p, lambda: x * 2.0 + tf.assign_add(hits, 1.0) * 0.0, lambda: x - 1.0)
        assert y.op.type == "Merge" and y.op.name == "cond/Merge"
        with _session(graph) as sess:
            assert sess.run(y, {p: True, x: 3.0}) == 6.0
            assert sess.run(y, {p: False, x: 3.0}) == 2.0
            assert sess.run(y, {p: False, x: 5.0}) == 4.0
            assert sess.run(hits) == 1.0  # the assignment ran once, with its branch


def test_cond_structures_strict_and_legacy_names():
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.bool, [])
        a = tf.constant(1.0)
        out = tf.cond(p, lambda: {"v": a, "pair": (a + 1.0, tf.constant(7))},
                      lambda: {"v": a * 10.0, "pair": (a - 1.0, tf.constant(8))})
        assert sorted(out) == ["pair", "v"] and isinstance(out["pair"], tuple)
        single = tf.cond(p, lambda: [a], lambda: [a + 1.0])
        strict = tf.cond(p, lambda: [a], lambda: [a + 1.0], strict=True)
        legacy = tf.cond(p, fn1=lambda: a, fn2=lambda: a * 3.0)
        assert isinstance(single, tf.Tensor) and isinstance(strict, list)
        with pytest.raises(ValueError, match="same structure"):
            tf.cond(p, lambda: (a, a), lambda: a)
        with pytest.raises(TypeError, match="Python bool"):
            tf.cond(True, lambda: a, lambda: a)
        with pytest.raises(TypeError, match="callable"):
            tf.cond(p, a, lambda: a)
        with _session(graph) as sess:
            got = sess.run([out, single, strict, legacy], {p: False})
    assert got[0] == {"v": 10.0, "pair": (0.0, 8)}
    assert got[1] == 2.0 and got[2] == [2.0] and got[3] == 3.0


def test_nested_cond_and_fetching_an_untaken_value():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.bool, [])
        b = tf.placeholder(tf.bool, [])
        x = tf.placeholder(tf.float32, [])
        inside = []

        def inner_true():
            t = tf.identity(x * 100.0, name="hundred")
            inside.append(t)
            return t
        y = tf.cond(a, lambda: tf.cond(b, inner_true, lambda: x * 10.0), lambda: x)
        with _session(graph) as sess:
            feeds = {x: 2.0}
            assert sess.run(y, {**feeds, a: True, b: True}) == 200.0
            assert sess.run(y, {**feeds, a: True, b: False}) == 20.0
            assert sess.run(y, {**feeds, a: False, b: True}) == 2.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="untaken side of Switch"):
                sess.run(inside[0], {**feeds, a: False, b: True})


def test_case_and_switch_case_pick_one_fn():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.int32, [])
        counter = tf.Variable(0, name="counter")
        r = tf.case([(tf.less(x, 0), lambda: tf.constant(-1)),
                     (tf.equal(x, 0), lambda: tf.assign_add(counter, 1) * 0)],
                    default=lambda: tf.constant(1), exclusive=True)
        last_is_default = tf.case([(tf.less(x, 0), lambda: tf.constant(10)),
                                   (tf.less(x, 100), lambda: tf.constant(20))])
        s = tf.switch_case(x, [lambda: tf.constant(5.0), lambda: tf.constant(6.0),
                               lambda: tf.constant(7.0)])
        with _session(graph) as sess:
            assert sess.run([r, last_is_default, s], {x: -3}) == [-1, 10, 7.0]
            assert sess.run([r, last_is_default, s], {x: 0}) == [0, 20, 5.0]
            assert sess.run([r, last_is_default, s], {x: 1}) == [1, 20, 6.0]
            assert sess.run([r, last_is_default, s], {x: 500}) == [1, 20, 7.0]
            assert sess.run(counter) == 1


def test_is_training_placeholder_switches_dropout():
    graph = tf.Graph()
    with graph.as_default():
        is_training = tf.placeholder(tf.bool, [], name="is_training")
        x = tf.placeholder(tf.float32, [None, 1000])
        y = tf.layers.dropout(x, rate=0.5, training=is_training, seed=1)
        with _session(graph) as sess:
            ones = np.ones((4, 1000), np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: ones, is_training: False}), ones)
            dropped = sess.run(y, {x: ones, is_training: True})
    assert set(np.unique(dropped)) <= {0.0, 2.0}
    assert 0.4 < (dropped == 0).mean() < 0.6


def test_dense_layer_inside_a_branch_keeps_its_variables_outside():
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.bool, [])
        x = tf.constant([[1.0, 2.0]])
        y = tf.cond(p, lambda: tf.layers.dense(x, 3, name="head"), lambda: tf.zeros([1, 3]))
        names = [v.name for v in tf.global_variables()]
        assert "cond/head/kernel:0" in names or "head/kernel:0" in names
        with pytest.raises(ValueError, match="inside a control-flow construct"):
            tf.cond(p, lambda: tf.Variable(tf.constant(1.0)), lambda: tf.constant(0.0))
        with _session(graph) as sess:  # the initializers run with neither branch taken
            assert sess.run(y, {p: False}).tolist() == [[0.0, 0.0, 0.0]]
            assert sess.run(y, {p: True}).shape == (1, 3)


def test_gradients_and_adam_through_a_cond_match_tf1():
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.bool, [])
        w = tf.Variable(2.0, name="w")
        u = tf.Variable(3.0, name="u")
        loss = tf.cond(p, lambda: w * w, lambda: u * 1.0)
        gw, gu = tf.gradients(loss, [w, u])
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(loss)
        with _session(graph) as sess:
            assert sess.run([gw, gu], {p: True}) == [4.0, 0.0]
            assert sess.run([gw, gu], {p: False}) == [0.0, 1.0]
            sess.run(train, {p: True})   # w's gradient 4, u's a zero
            sess.run(train, {p: False})  # w's gradient zero: its momentum still moves it
            got = sess.run([w, u])
    # TF1's Adam over dense gradients, a zero one included.
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.1
    values = {"w": 2.0, "u": 3.0}
    m = {"w": 0.0, "u": 0.0}
    v = {"w": 0.0, "u": 0.0}
    for t, grads in ((1, {"w": 4.0, "u": 0.0}), (2, {"w": 0.0, "u": 1.0})):
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        for k in values:
            m[k] = b1 * m[k] + (1 - b1) * grads[k]
            v[k] = b2 * v[k] + (1 - b2) * grads[k] ** 2
            values[k] -= lr_t * m[k] / (np.sqrt(v[k]) + eps)
    np.testing.assert_allclose(got, [values["w"], values["u"]], rtol=1e-5)
    assert got[0] != pytest.approx(2.0 - 0.1)  # the zero step moved w


def test_warmup_schedule_under_an_estimator(tmp_path):
    warmup, base_lr, steps = 3, 0.1, 6
    xs = np.linspace(-1, 1, 8).astype(np.float32).reshape(-1, 1)
    ys = 3.0 * xs

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
        pred = tf.matmul(features["x"], w)
        loss = tf.reduce_mean(tf.square(pred - labels))
        step = tf.train.get_or_create_global_step()
        # The TF1 warmup idiom: a linear ramp, then the base rate.
        lr = tf.cond(step < warmup,
                     lambda: base_lr * tf.cast(step + 1, tf.float32) / warmup,
                     lambda: tf.constant(base_lr))
        train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": xs}, ys, batch_size=8, num_epochs=None,
                                                 shuffle=False), steps=steps)
    w = 0.0
    for t in range(steps):
        lr = base_lr * (t + 1) / warmup if t < warmup else base_lr
        w -= lr * np.mean(2 * (w * xs - ys) * xs)
    np.testing.assert_allclose(est.get_variable_value("w"), [[w]], rtol=1e-5)


# --- tf.cond inside tf.while_loop (the loop's region honours dead values) ----------------
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _clipped_rnn_numpy(h0, w, x, steps=5, clip=0.5):
    """h = tanh(h @ w + x) on even steps, h * sigmoid(x) on odd ones, rescaled to norm
    `clip` whenever its norm exceeds it (tf.clip_by_norm written as a cond)."""
    h = h0
    for t in range(steps):
        h = np.tanh(h @ w + x) if t % 2 == 0 else h * _sigmoid(x)
        norm = np.sqrt(np.sum(h * h))
        if norm > clip:
            h = h * (clip / norm)
    return np.sum(h * np.arange(1, h.size + 1).reshape(h.shape))


def _clipped_rnn(h0, w, x, steps=5, clip=0.5):
    def body(t, h):
        h = tf.cond(tf.equal(t % 2, 0), lambda: tf.tanh(tf.matmul(h, w) + x),
                    lambda: h * tf.sigmoid(x))
        norm = tf.sqrt(tf.reduce_sum(h * h))
        h = tf.cond(norm > clip, lambda: h * (clip / norm), lambda: h)
        return t + 1, h
    _, h = tf.while_loop(lambda t, h: t < steps, body, [tf.constant(0), h0])
    weights = np.arange(1, 4, dtype=np.float64).reshape(1, 3)
    return tf.reduce_sum(h * weights)


def _numeric_gradient(f, value, delta=1e-6):
    grad = np.zeros_like(value)
    for index in np.ndindex(*value.shape):
        up, down = value.copy(), value.copy()
        up[index] += delta
        down[index] -= delta
        grad[index] = (f(up) - f(down)) / (2 * delta)
    return grad


def test_a_cond_inside_a_loop_body_runs_only_its_branch():
    graph = tf.Graph()
    with graph.as_default():
        hits = tf.Variable(0, name="hits")

        def body(x):
            def small():
                with tf.control_dependencies([tf.assign_add(hits, 1)]):
                    return x + 1.0
            return tf.cond(x < 5.0, small, lambda: x + 2.0)
        y = tf.while_loop(lambda x: x < 10.0, body, [tf.constant(0.0)])
        with _session(graph) as sess:
            assert sess.run(y) == 11.0  # 1, 2, 3, 4, 5, 7, 9, 11
            assert sess.run(hits) == 5  # the assignment ran with its branch only


def test_a_clipped_rnn_with_conds_in_its_body_matches_numpy_and_its_gradient():
    rng = np.random.RandomState(3)
    h0_value = rng.uniform(-1, 1, (1, 3))
    w_value = rng.uniform(-1.5, 1.5, (3, 3))
    x_value = rng.uniform(-1, 1, (1, 3))
    graph = tf.Graph()
    with graph.as_default():
        h0 = tf.placeholder(tf.float64, [1, 3])
        w = tf.placeholder(tf.float64, [3, 3])
        x = tf.placeholder(tf.float64, [1, 3])
        y = _clipped_rnn(h0, w, x)
        grads = tf.gradients(y, [h0, w, x])
        with tf.Session() as sess:
            got, got_grads = sess.run([y, grads], {h0: h0_value, w: w_value, x: x_value})
    np.testing.assert_allclose(got, _clipped_rnn_numpy(h0_value, w_value, x_value), rtol=1e-12)
    numeric = [
        _numeric_gradient(lambda v: _clipped_rnn_numpy(v, w_value, x_value), h0_value),
        _numeric_gradient(lambda v: _clipped_rnn_numpy(h0_value, v, x_value), w_value),
        _numeric_gradient(lambda v: _clipped_rnn_numpy(h0_value, w_value, v), x_value)]
    for g, n in zip(got_grads, numeric):
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8)
    # Both clip branches ran at some step (else the test would not test the cond).
    clips = []
    h = h0_value
    for t in range(5):
        h = np.tanh(h @ w_value + x_value) if t % 2 == 0 else h * _sigmoid(x_value)
        clips.append(np.sqrt(np.sum(h * h)) > 0.5)
        h = h * (0.5 / np.sqrt(np.sum(h * h))) if clips[-1] else h
    assert any(clips) and not all(clips)


def test_an_optimizer_trains_through_a_cond_in_a_loop_body():
    rng = np.random.RandomState(4)
    h0_value = rng.uniform(-1, 1, (1, 3))
    w_value = rng.uniform(-1.5, 1.5, (3, 3))
    x_value = rng.uniform(-1, 1, (1, 3))
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(w_value, name="w")
        loss = _clipped_rnn(tf.constant(h0_value), w, tf.constant(x_value))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with _session(graph) as sess:
            sess.run(train)
            got = sess.run(w)
    step = _numeric_gradient(lambda v: _clipped_rnn_numpy(h0_value, v, x_value), w_value)
    np.testing.assert_allclose(got, w_value - 0.01 * step, rtol=1e-9, atol=1e-10)


def test_an_early_exit_search_with_a_cond_in_a_cond_in_the_body():
    # Beam-search style bookkeeping: walk the scores until one exceeds the bar; below
    # the bar, count the negatives and the small positives apart (a nested cond).
    scores = np.array([-0.5, 0.2, -0.1, 0.4, 0.9, 0.3, 1.2], np.float64)
    graph = tf.Graph()
    with graph.as_default():
        s = tf.constant(scores)
        bar = tf.placeholder(tf.float64, [])

        def body(i, done, negatives, small):
            v = tf.gather(s, i)

            def below():
                return tf.cond(v < 0.0, lambda: (negatives + 1.0, small),
                               lambda: (negatives, small + v))
            negatives, small = tf.cond(v > bar, lambda: (negatives, small), below)
            return i + 1, v > bar, negatives, small
        out = tf.while_loop(lambda i, done, n, m: tf.logical_and(i < len(scores),
                                                                   tf.logical_not(done)),
                            body, [tf.constant(0), tf.constant(False),
                                   tf.constant(0.0, tf.float64), tf.constant(0.0, tf.float64)])
        with tf.Session() as sess:
            for value in (0.5, 0.85, 2.0):
                i, done, negatives, small = sess.run(out, {bar: value})
                first = next((k for k, v in enumerate(scores) if v > value), None)
                seen = scores[:len(scores) if first is None else first]
                assert i == (len(scores) if first is None else first + 1)
                assert done == (first is not None)
                assert negatives == np.sum(seen < 0)
                np.testing.assert_allclose(small, np.sum(seen[seen >= 0]), rtol=1e-12)


def test_a_tensor_array_written_inside_a_cond_in_a_loop_body():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.arange(6, dtype=np.float64))
        ta = tf.TensorArray(tf.float64, size=6)

        def body(i, ta):
            ta = tf.cond(tf.equal(i % 3, 0), lambda: ta.write(i, tf.gather(x, i) * 10.0),
                         lambda: ta.write(i, -tf.gather(x, i)))
            return i + 1, ta
        _, ta = tf.while_loop(lambda i, ta: i < 6, body, [tf.constant(0), ta])
        stacked = ta.stack()
        grad = tf.gradients(tf.reduce_sum(stacked * np.arange(1.0, 7.0)), x)[0]
        with tf.Session() as sess:
            got, got_grad = sess.run([stacked, grad])
    np.testing.assert_array_equal(got, [0.0, -1.0, -2.0, 30.0, -4.0, -5.0])
    np.testing.assert_array_equal(got_grad, [10.0, -2.0, -3.0, 40.0, -5.0, -6.0])


def test_a_while_inside_a_cond_inside_a_while():
    graph = tf.Graph()
    with graph.as_default():
        def body(i, acc):
            def doubling():
                bound = tf.cast(2 * i, tf.float64)
                return tf.while_loop(lambda v: v < bound, lambda v: v * 2.0,
                                     [tf.constant(1.0, tf.float64)])
            add = tf.cond(tf.equal(i % 2, 1), doubling, lambda: tf.constant(100.0, tf.float64))
            return i + 1, acc + add
        _, acc = tf.while_loop(lambda i, acc: i < 4, body,
                               [tf.constant(0), tf.constant(0.0, tf.float64)])
        with tf.Session() as sess:
            assert sess.run(acc) == 100.0 + 2.0 + 100.0 + 8.0
