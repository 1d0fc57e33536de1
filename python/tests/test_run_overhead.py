"""What keeps a Python-driven step as fast as the C++ one (issue 13's speed targets), as
properties that hold on any machine, not timings:
  - Session.run(train_op, feed_dict) in a loop resolves the fetch and the feed keys once:
    one cached native callable per (fetch, feed keys), whatever the number of runs, with
    the same results and errors as the general path;
  - Session.make_callable resolves everything once and returns TF's structures;
  - an Estimator's train loop (the convnet.py benchmark's shape: numpy_input_fn, a
    model_fn, the default hooks) builds its graph once and calls no Python function per
    step: the Python calls made during train(steps=N) do not grow with N."""
import collections
import sys
import threading

import numpy as np
import pytest

import loom.compat.v1 as tf


def _softreg():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    w = tf.Variable(tf.zeros([4, 3]), name="w")
    logits = tf.matmul(x, w)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    return x, y, w, loss, train_op


def _feed(x, y, seed=0):
    rng = np.random.RandomState(seed)
    return {x: rng.randn(8, 4).astype(np.float32), y: rng.randint(0, 3, 8).astype(np.int64)}


def test_run_caches_one_callable_per_signature():
    x, y, w, loss, train_op = _softreg()
    feed = _feed(x, y)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(50):
            sess.run(train_op, feed)
        # One entry per (fetch, keys) seen: init, loss, train_op.
        assert len(sess._callables) == 3
        sess.run(train_op, {y: feed[y], x: feed[x]})  # other key order: its own entry
        assert len(sess._callables) == 4
        after = sess.run(loss, feed)
        assert after < first  # the cached train_op trained
        # The general path (a list fetch) agrees with the cached one.
        listed = sess.run([loss, w], feed)
        np.testing.assert_allclose(listed[0], after, rtol=1e-6)
        np.testing.assert_array_equal(listed[1], sess.run(w))
        assert sess._native.num_runs == 1 + 1 + 50 + 1 + 1 + 1 + 1


def test_cached_run_converts_and_rejects_like_the_general_path():
    x, y, w, loss, train_op = _softreg()
    feed = _feed(x, y)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        base = sess.run(loss, feed)
        # float64 into the float32 placeholder converts (TF's session.run), on a hit too.
        for _ in range(2):
            v = sess.run(loss, {x: feed[x].astype(np.float64), y: feed[y]})
            np.testing.assert_allclose(v, base, rtol=1e-6)
        # A strided view is made contiguous; the result is the same.
        wide = np.repeat(feed[x], 2, axis=1)[:, ::2]
        assert not wide.flags["C_CONTIGUOUS"]
        np.testing.assert_allclose(sess.run(loss, {x: wide, y: feed[y]}), base, rtol=1e-6)
        # Errors are the general path's, on the first call and on a cache hit.
        for _ in range(2):
            with pytest.raises(TypeError, match="cannot be a tf.Tensor object"):
                sess.run(loss, {x: tf.zeros([8, 4]), y: feed[y]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="feed for 'y:0'"):
                sess.run(loss, {x: feed[x], y: np.zeros(8, np.float32)})
            with pytest.raises(tf.errors.InvalidArgumentError, match="x"):
                sess.run(loss, {x: np.zeros((8, 5), np.float32), y: feed[y]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(loss)  # nothing fed


def test_fetched_values_do_not_alias_feeds_or_variables():
    x, y, w, loss, train_op = _softreg()
    feed = _feed(x, y)
    ident = tf.identity(x)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(ident, feed)
        np.testing.assert_array_equal(out, feed[x])
        out[0, 0] = 123.0
        assert feed[x][0, 0] != 123.0
        before = sess.run(w)
        sess.run(train_op, feed)
        assert not np.array_equal(before, sess.run(w))  # the earlier fetch kept its value


def test_make_callable_structures():
    x, y, w, loss, train_op = _softreg()
    feed = _feed(x, y)
    Pair = collections.namedtuple("Pair", ["loss", "w"])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        step = sess.make_callable(train_op, [x, y])
        assert step(feed[x], feed[y]) is None
        get_loss = sess.make_callable(loss, [x, "y:0"])
        value = get_loss(feed[x], feed[y])
        assert isinstance(value, np.float32)
        both = sess.make_callable(Pair(loss, w), [x, y])
        result = both(feed[x], feed[y])
        assert isinstance(result, Pair)
        np.testing.assert_allclose(result.loss, value)
        nested = sess.make_callable({"a": [loss, train_op], "b": w}, [x, y])
        out = nested(feed[x], feed[y])
        assert out["a"][1] is None and out["b"].shape == (4, 3)
        no_feeds = sess.make_callable(w)
        np.testing.assert_array_equal(no_feeds(), sess.run(w))
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected 2 feed values"):
            step(feed[x])
        with pytest.raises(TypeError, match="cannot be a tf.Tensor object"):
            step(tf.zeros([8, 4]), feed[y])


def _convnet_fn(features, labels, mode):
    x = tf.reshape(features["x"], [-1, 4, 4, 1])
    conv = tf.layers.conv2d(x, filters=2, kernel_size=[3, 3], padding="same",
                            activation=tf.nn.relu)
    pool = tf.layers.max_pooling2d(conv, pool_size=[2, 2], strides=2)
    logits = tf.layers.dense(tf.reshape(pool, [-1, 8]), units=3)
    onehot = tf.one_hot(indices=tf.cast(labels, tf.int32), depth=3)
    loss = tf.losses.softmax_cross_entropy(onehot_labels=onehot, logits=logits)
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def _python_calls_during(fn):
    """The Python functions called (on any thread) while fn runs, as a Counter of
    (file, function)."""
    calls = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            calls[(frame.f_code.co_filename, frame.f_code.co_name)] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return calls


def test_estimator_train_calls_no_python_per_step(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.rand(64, 16).astype(np.float32)
    y = rng.randint(0, 3, 64).astype(np.int32)
    input_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=8, num_epochs=None,
                                                  shuffle=True)
    counts = {}
    for steps in (3, 60):
        est = tf.estimator.Estimator(_convnet_fn, model_dir=str(tmp_path / str(steps)))
        calls = _python_calls_during(lambda: est.train(input_fn, steps=steps))
        assert est._native.model_fn_calls == 1  # one graph build for the whole train()
        assert calls[(_convnet_fn.__code__.co_filename, "_convnet_fn")] == 1
        counts[steps] = calls
    assert sum(counts[60].values()) == sum(counts[3].values()), (
        "Python functions called per step: %s" % (counts[60] - counts[3]))


def test_run_config_session_config_sets_the_estimator_threads(model_dir):
    # tf.ConfigProto(intra_op_parallelism_threads=1) in RunConfig reaches the C++
    # Estimator's Sessions (on a loaded machine one thread avoids the kernels' threads
    # waiting on each other); the default stays 0, the machine's core count.
    config = tf.estimator.RunConfig(
        session_config=tf.ConfigProto(intra_op_parallelism_threads=1))
    assert config._native_config.intra_op_threads == 1
    assert config.replace(save_summary_steps=5)._native_config.intra_op_threads == 1
    assert tf.estimator.RunConfig()._native_config.intra_op_threads == 0
    x = np.random.RandomState(0).rand(16, 16).astype(np.float32)
    y = np.zeros(16, np.int32)
    est = tf.estimator.Estimator(_convnet_fn, model_dir=model_dir, config=config)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=8, shuffle=True,
                                                 num_epochs=None), steps=2)
    assert est.get_variable_value("global_step") == 2


def test_a_hooks_session_runs_through_the_cache(model_dir):
    # The tf.Session a hook gets wraps the MonitoredSession's C++ Session; its run takes
    # the cached path too (the 2 GB scenario's initializer hook feeds arrays this way).
    rng = np.random.RandomState(0)
    data = rng.rand(64, 16).astype(np.float32)
    labels = rng.randint(0, 3, 64).astype(np.int32)
    ran = []

    class InitHook(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            for _ in range(2):
                session.run(self.init, {self.x: data, self.y: labels})
            ran.append(len(session._callables))

    hook = InitHook()

    def input_fn():
        hook.x = tf.placeholder(tf.float32, data.shape)
        hook.y = tf.placeholder(tf.int32, labels.shape)
        it = tf.data.Dataset.from_tensor_slices(({"x": hook.x}, hook.y)).repeat().batch(8) \
            .make_initializable_iterator()
        hook.init = it.initializer
        return it.get_next()

    est = tf.estimator.Estimator(_convnet_fn, model_dir=model_dir)
    est.train(input_fn, hooks=[hook], steps=3)
    assert ran == [1]
    assert est.get_variable_value("global_step") == 3
