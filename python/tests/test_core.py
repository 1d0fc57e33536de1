"""The graph core of loom.compat.v1: default graph, placeholders, constants, variables,
generated ops, operators and slicing, Session.run with nested fetches and numpy arrays,
errors."""
import collections

import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_default_graph_and_as_default():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0)
        assert tf.get_default_graph() is g
    assert c.graph is g
    assert tf.get_default_graph() is not g
    d = tf.constant(2.0)
    assert d.graph is tf.get_default_graph()
    tf.reset_default_graph()
    assert tf.get_default_graph() is not d.graph


def test_names_and_name_scopes():
    a = tf.constant(1.0, name="a")
    b = tf.constant(1.0, name="a")
    assert (a.name, b.name) == ("a:0", "a_1:0")
    with tf.name_scope("layer"):
        c = tf.add(a, b)
    with tf.name_scope("layer"):
        d = tf.add(a, b, name="sum")
    assert c.name == "layer/Add:0"
    assert d.name == "layer_1/sum:0"
    assert tf.get_default_graph().get_tensor_by_name("layer/Add:0") is c
    assert tf.get_default_graph().get_operation_by_name("layer_1/sum") is d.op


def test_constant_dtypes_follow_tf():
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant(3).dtype == tf.int32
    assert tf.constant(np.float64(1.5)).dtype == tf.float64
    assert tf.constant([1, 2], dtype=tf.int64).dtype == tf.int64
    assert tf.constant(0.0, shape=[2, 3]).shape.as_list() == [2, 3]


def test_placeholder_feed_and_nested_fetches():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.constant([[1.0], [2.0]])
    y = tf.matmul(x, w)
    s = tf.reduce_sum(y)
    Pair = collections.namedtuple("Pair", "y s")
    with tf.Session() as sess:
        feed = {x: np.array([[1, 1], [2, 0]], np.float32)}
        out = sess.run({"pair": Pair(y, s), "list": [s, (y,)]}, feed_dict=feed)
    np.testing.assert_allclose(out["pair"].y, [[3.0], [2.0]])
    assert isinstance(out["pair"], Pair)
    assert out["pair"].s == pytest.approx(5.0)
    assert isinstance(out["list"], list) and isinstance(out["list"][1], tuple)
    np.testing.assert_allclose(out["list"][1][0], [[3.0], [2.0]])


def test_float64_feed_is_converted_to_a_float32_placeholder():
    x = tf.placeholder(tf.float32, [3])
    with tf.Session() as sess:
        out = sess.run(x * 2.0, {x: np.array([1.0, 2.0, 3.5])})  # float64 in
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [2.0, 4.0, 7.0])


def test_float_feed_to_an_int_placeholder_is_an_error_naming_it():
    x = tf.placeholder(tf.int32, [2], name="ids")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="ids"):
            sess.run(x + 1, {x: np.array([1.5, 2.0])})


def test_an_empty_list_feeds_any_placeholder_dtype():
    # numpy makes [] float64; TF feeds it to an int placeholder, and nothing is lost.
    ids = tf.placeholder(tf.int32, [None], name="ids")
    rows = tf.placeholder(tf.int64, [None, 3], name="rows")
    with tf.Session() as sess:
        total, shape = sess.run([tf.reduce_sum(ids), tf.shape(rows)],
                                {ids: [], rows: np.zeros((0, 3))})
    assert total == 0 and total.dtype == np.int32
    np.testing.assert_array_equal(shape, [0, 3])


def test_outputs_are_numpy_arrays_that_own_or_share_a_loom_buffer_safely():
    v = tf.Variable(tf.zeros([3]), name="v")
    inc = tf.assign_add(v, tf.ones([3]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(v)
        sess.run(inc)
        after = sess.run(v)
    # A fetched value never changes under its holder when the variable is updated.
    np.testing.assert_array_equal(before, [0, 0, 0])
    np.testing.assert_array_equal(after, [1, 1, 1])


def test_feeds_are_borrowed_without_a_copy():
    x = tf.placeholder(tf.float32, [4])
    y = tf.identity(x)
    arr = np.arange(4, dtype=np.float32)
    with tf.Session() as sess:
        out = sess.run(y, {x: arr})
    np.testing.assert_array_equal(out, arr)
    # The result never aliases the fed array (it is copied because the buffer is borrowed).
    assert not np.shares_memory(out, arr)


def test_operators_and_slicing():
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    b = tf.constant([1.0, 1.0, 1.0, 1.0])
    with tf.Session() as sess:
        r = sess.run({"add": x + b, "neg": -x, "rsub": 10.0 - x, "mul": x * 2,
                      "div": x / 2.0, "newaxis": b[:, tf.newaxis], "rows": x[1:3],
                      "elem": x[1, 2], "col": x[:, -1], "rev": x[::-1, 0],
                      "ellipsis": x[..., 1], "pow": x ** 2, "cmp": x > 5.0,
                      "matmul": x @ tf.transpose(x)})
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(r["add"], ref + 1)
    np.testing.assert_allclose(r["neg"], -ref)
    np.testing.assert_allclose(r["rsub"], 10 - ref)
    np.testing.assert_allclose(r["mul"], ref * 2)
    np.testing.assert_allclose(r["div"], ref / 2)
    assert r["newaxis"].shape == (4, 1)
    np.testing.assert_allclose(r["rows"], ref[1:3])
    assert r["elem"] == ref[1, 2]
    np.testing.assert_allclose(r["col"], ref[:, -1])
    np.testing.assert_allclose(r["rev"], ref[::-1, 0])
    np.testing.assert_allclose(r["ellipsis"], ref[..., 1])
    np.testing.assert_allclose(r["pow"], ref ** 2)
    np.testing.assert_array_equal(r["cmp"], ref > 5)
    np.testing.assert_allclose(r["matmul"], ref @ ref.T)


def test_generated_ops_take_tf_arguments():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        r = sess.run({
            "mean0": tf.reduce_mean(x, axis=0),
            "sum_keep": tf.reduce_sum(x, 1, keepdims=True),
            "max_legacy": tf.reduce_max(x, reduction_indices=[1], keep_dims=True),
            "relu": tf.nn.relu(x - 2.5),
            "softmax": tf.nn.softmax(x),
            "mm_t": tf.matmul(x, x, transpose_b=True),
            "reshape": tf.reshape(x, [-1]),
            "argmax": tf.argmax(x, axis=1),
            "cast": tf.cast(x, tf.int32),
            "xent": tf.nn.softmax_cross_entropy_with_logits_v2(labels=[[0.0, 1.0], [1.0, 0.0]],
                                                               logits=x),
        })
    ref = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(r["mean0"], ref.mean(0))
    np.testing.assert_allclose(r["sum_keep"], ref.sum(1, keepdims=True))
    np.testing.assert_allclose(r["max_legacy"], ref.max(1, keepdims=True))
    np.testing.assert_allclose(r["relu"], np.maximum(ref - 2.5, 0))
    e = np.exp(ref - ref.max(1, keepdims=True))
    np.testing.assert_allclose(r["softmax"], e / e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(r["mm_t"], ref @ ref.T)
    np.testing.assert_allclose(r["reshape"], ref.reshape(-1))
    np.testing.assert_array_equal(r["argmax"], [1, 1])
    assert r["cast"].dtype == np.int32
    logp = np.log(e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(r["xent"], [-logp[0, 1], -logp[1, 0]], rtol=1e-5)


def test_every_registered_op_is_a_raw_op():
    from loom import _loom
    names = [r["name"] for r in _loom.op_defs()]
    assert len(names) > 100
    for n in names:
        assert callable(getattr(tf.raw_ops, n)), n
    assert tf.raw_ops.MatMul.__doc__.startswith("The Loom op MatMul")


def test_raw_op_rejects_an_undeclared_attribute():
    x = tf.constant([1.0])
    with pytest.raises(TypeError, match="transpose_a"):
        tf.raw_ops.Relu(x, transpose_a=True)


def test_loom_errors_arrive_as_tf_errors_with_their_message():
    x = tf.placeholder(tf.float32, [None, 3], name="features")
    y = tf.reduce_sum(x)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y)
    assert "features" in info.value.message
    assert isinstance(info.value, tf.errors.OpError)
    assert info.value.error_code == tf.errors.INVALID_ARGUMENT
    with pytest.raises(tf.errors.InvalidArgumentError, match="inner dimensions|MatMul"):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))


def test_variables_initializers_and_eval_under_a_default_session():
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.get_variable("w", [2, 3], initializer=tf.zeros_initializer())
    with tf.variable_scope("dense"):
        k = tf.get_variable("kernel", [3, 3])
    with tf.variable_scope("dense", reuse=True):
        k2 = tf.get_variable("kernel")
    assert k2 is k and k.name == "dense/kernel:0"
    with pytest.raises(ValueError, match="already exists"):
        with tf.variable_scope("dense"):
            tf.get_variable("kernel", [3, 3])
    assert set(tf.global_variables()) == {v, w, k}
    assert set(tf.trainable_variables()) == {v, w, k}
    sess = tf.InteractiveSession()
    try:
        tf.global_variables_initializer().run()
        np.testing.assert_array_equal(v.eval(), [1.0, 2.0])
        np.testing.assert_array_equal(w.eval(), np.zeros([2, 3]))
        lim = np.sqrt(6.0 / 6.0)
        assert np.all(np.abs(k.eval()) <= lim)
        v.load([5.0, 6.0])
        np.testing.assert_array_equal((v * 2).eval(), [10.0, 12.0])
    finally:
        sess.close()


def test_uninitialized_variable_is_failed_precondition():
    v = tf.Variable(1.0, name="lonely")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="lonely"):
            sess.run(v + 1.0)


def test_update_ops_collection_is_the_graph_collection():
    v = tf.Variable(0.0)
    op = tf.assign_add(v, 1.0).op
    tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, op)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == [op]
    assert "update_ops" in tf.get_default_graph().get_all_collection_keys()
    tf.add_to_collection("my_things", 3)
    assert tf.get_collection("my_things") == [3]


def test_gradients():
    x = tf.placeholder(tf.float32, [3])
    y = tf.reduce_sum(x * x)
    (g,) = tf.gradients(y, [x])
    unrelated = tf.placeholder(tf.float32, [3])
    assert tf.gradients(y, [unrelated]) == [None]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])


def test_control_dependencies():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        read = tf.identity(v)
    assert inc.op in read.op.control_inputs


def test_session_run_releases_the_gil():
    import threading
    x = tf.constant(np.ones((1200, 1200), np.float32) / 1200)
    y = tf.reduce_sum(x @ x @ x @ x)
    sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
    result = []
    t = threading.Thread(target=lambda: result.append(sess.run(y)))
    count = 0
    t.start()
    while t.is_alive():
        count += 1  # runs only while the C++ run does not hold the GIL
    t.join()
    assert result[0] == pytest.approx(1200.0, rel=1e-3)
    assert count > 1000


def _rss_bytes():
    import os
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_large_feed_is_borrowed_not_copied():
    big = np.ones(64 << 20, np.float32)  # 256 MiB
    x = tf.placeholder(tf.float32, [None])
    total = tf.reduce_sum(x)
    with tf.Session() as sess:
        sess.run(total, {x: big[:16]})  # warm up: plan, pool
        before = _rss_bytes()
        assert sess.run(total, {x: big}) == pytest.approx(float(64 << 20))
        grown = _rss_bytes() - before
    assert grown < (32 << 20), "RSS grew by %d bytes: the feed was copied" % grown
    # A float64 array fed to the float32 placeholder is converted (one copy), as TF does.
    with tf.Session() as sess:
        assert sess.run(total, {x: np.ones(10)}) == pytest.approx(10.0)


def test_composites_reshape_dynamic_clip_by_global_norm_moments_stack():
    x = tf.placeholder(tf.float32, [None, 4])
    flat = tf.reshape(x, [tf.shape(x)[0] * 4])
    a = tf.constant([3.0, 0.0])
    b = tf.constant([[0.0], [4.0]])
    (ca, cb), norm = tf.clip_by_global_norm([a, b], 1.0)
    mean, var = tf.nn.moments(x, [0])
    st = tf.stack([a, a * 2], axis=1)
    xs = np.arange(8, dtype=np.float32).reshape(2, 4)
    with tf.Session() as sess:
        r = sess.run([flat, ca, cb, norm, mean, var, st], {x: xs})
    np.testing.assert_array_equal(r[0], xs.reshape(-1))
    np.testing.assert_allclose(r[1], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(r[2], [[0.0], [0.8]], rtol=1e-6)
    assert r[3] == pytest.approx(5.0)
    np.testing.assert_allclose(r[4], xs.mean(0))
    np.testing.assert_allclose(r[5], xs.var(0))
    np.testing.assert_array_equal(r[6], [[3.0, 6.0], [0.0, 0.0]])


def test_floormod_and_the_percent_operator_follow_tf_signs_and_gradients():
    # TF's FloorMod: the result has the divisor's sign (Python's %, not C's fmod).
    tf.reset_default_graph()
    x = tf.constant([-7.0, 7.0, -7.5, 7.5])
    y = tf.constant([2.0, -2.0, 2.0, 2.0])
    z = x % y
    w = 10.0 % tf.constant(4.0)
    gx, gy = tf.gradients(tf.reduce_sum(tf.mod(x, y)), [x, y])
    with tf.Session() as sess:
        vz, vw, vgx, vgy = sess.run([z, w, gx, gy])
    np.testing.assert_allclose(vz, np.mod([-7.0, 7.0, -7.5, 7.5], [2.0, -2.0, 2.0, 2.0]))
    assert vw == 2.0
    np.testing.assert_allclose(vgx, [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(vgy, -np.floor(np.array([-7.0, 7.0, -7.5, 7.5]) /
                                             np.array([2.0, -2.0, 2.0, 2.0])))
    assert tf.math.floormod is tf.floormod


def test_integer_division_follows_tf_python3_semantics():
    # TF 1.15: `/`, tf.divide and tf.truediv are true division (int32 and int64 operands
    # become float64); `//` and tf.floordiv round toward -inf; `%` takes the divisor's sign;
    # tf.div is TF1's Python 2 division (floor for integers). Loom once truncated all of
    # these for integers: 7 / 2 == 3 and -7 // 2 == -3, silently.
    tf.reset_default_graph()
    xs, ys = [7, -7, 7, -7, 6, 0], [2, 2, -2, -2, 3, 5]
    for dtype in (tf.int32, tf.int64):
        x, y = tf.constant(xs, dtype=dtype), tf.constant(ys, dtype=dtype)
        ops = [x / y, tf.divide(x, y), tf.truediv(x, y), x // y, tf.floordiv(x, y),
               x % y, tf.mod(x, y), tf.div(x, y), x // 2, -7 % y, 7 / x[0]]
        assert [o.dtype for o in ops[:3]] == [tf.float64] * 3
        assert all(o.dtype == dtype for o in ops[3:10])
        with tf.Session() as sess:
            v = sess.run(ops)
        a, b = np.array(xs), np.array(ys)
        for i in range(3):
            np.testing.assert_array_equal(v[i], a / b)
        for i in (3, 4, 7):
            np.testing.assert_array_equal(v[i], a // b)
        for i in (5, 6):
            np.testing.assert_array_equal(v[i], a % b)
        np.testing.assert_array_equal(v[8], a // 2)
        np.testing.assert_array_equal(v[9], -7 % b)
        assert v[10] == 1.0
    # uint8 true division gives float32, floats keep their dtype, bool is TF's TypeError.
    assert (tf.constant([3], dtype=tf.uint8) / tf.constant([2], dtype=tf.uint8)).dtype == tf.float32
    assert (tf.constant([3.0]) / 2).dtype == tf.float32
    with pytest.raises(TypeError, match="Invalid dtype"):
        tf.constant([True]) / tf.constant([True])
    # An integer zero divisor is an error naming the op, not a crash or a garbage value.
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        with tf.Session() as sess:
            sess.run(tf.constant([1]) // tf.constant([0]))
    # Floats: floor division and the remainder of TF's FloorMod, inside a dataset map too.
    ds = tf.data.Dataset.range(10).filter(lambda i: tf.equal(i % 3, 0)).map(lambda i: i // 2)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        got = [sess.run(nxt) for _ in range(4)]
    assert got == [0, 1, 3, 4]


def test_range_and_cumsum_as_tf():
    # tf.range: TF 1.15's argument forms, dtype inference and a computed limit.
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 3])
    n = tf.shape(x)[0]
    ops = [tf.range(5), tf.range(1, 8, 3), tf.range(5, 0, -2), tf.range(0., 1., 0.25),
           tf.range(3, dtype=tf.float32), tf.range(n), tf.range(tf.constant(4, tf.int64))]
    assert [o.dtype for o in ops] == [tf.int32, tf.int32, tf.int32, tf.float32, tf.float32,
                                      tf.int32, tf.int64]
    assert ops[0].shape.as_list() == [5] and ops[5].shape.as_list() == [None]
    c = [tf.cumsum([1, 2, 3]), tf.cumsum(tf.constant([[1., 2.], [3., 4.]]), axis=1, exclusive=True),
         tf.math.cumsum([1, 2, 3], reverse=True)]
    v = tf.placeholder(tf.float32, [3])
    g, = tf.gradients(tf.reduce_sum(tf.cumsum(v) * tf.constant([1., 10., 100.])), [v])
    with tf.Session() as sess:
        r = sess.run(ops + c + [g], {x: np.zeros((4, 3)), v: [1., 2., 3.]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="past limit"):
            sess.run(tf.range(n, 2), {x: np.zeros((4, 3))})
    np.testing.assert_array_equal(r[0], np.arange(5))
    np.testing.assert_array_equal(r[1], [1, 4, 7])
    np.testing.assert_array_equal(r[2], [5, 3, 1])
    np.testing.assert_array_equal(r[3], np.arange(0., 1., 0.25, dtype=np.float32))
    np.testing.assert_array_equal(r[4], [0., 1., 2.])
    np.testing.assert_array_equal(r[5], np.arange(4))
    np.testing.assert_array_equal(r[6], np.arange(4))
    np.testing.assert_array_equal(r[7], [1, 3, 6])
    np.testing.assert_array_equal(r[8], [[0., 1.], [0., 3.]])
    np.testing.assert_array_equal(r[9], [6, 5, 3])
    np.testing.assert_array_equal(r[10], [111., 110., 100.])
    with pytest.raises(tf.errors.InvalidArgumentError, match="delta must not be 0"):
        tf.range(0, 4, 0)


def test_round_takes_halves_to_even():
    # TF 1.15's documented example for tf.round: banker's rounding.
    x = tf.constant([0.9, 2.5, 2.3, 1.5, -4.5])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.round(x)), [1.0, 2.0, 2.0, 2.0, -4.0])
        np.testing.assert_array_equal(sess.run(tf.math.round(tf.constant([0.5, -1.5], tf.float64))),
                                      [0.0, -2.0])
    # Like tf.floor here: a clear error where TF 1.15 returns a None gradient.
    with pytest.raises(tf.errors.InvalidArgumentError, match="cannot differentiate through Round"):
        tf.gradients(tf.round(x), x)
