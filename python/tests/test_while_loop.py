"""tf.while_loop, tf.map_fn, tf.scan, tf.foldl and tf.foldr over Loom's While op: forward
values, nested loop variables, maximum_iterations, shape invariants, errors, gradients
and training through a loop."""
import collections

import numpy as np
import pytest

import loom.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_counter_and_product():
    i, x = tf.while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x * 2.0),
                         [tf.constant(0), tf.constant([1.0, 3.0])])
    with tf.Session() as sess:
        vi, vx = sess.run([i, x])
    assert vi == 5
    np.testing.assert_allclose(vx, [32.0, 96.0])
    assert x.shape.as_list() == [2]


def test_single_loop_var_and_data_dependent_trip_count():
    limit = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda x: x < limit, lambda x: x * 1.5, [tf.constant(1.0)])
    assert isinstance(y, tf.Tensor)  # one loop variable: the tensor, not a list
    with tf.Session() as sess:
        assert sess.run(y, {limit: 10.0}) == pytest.approx(1.5 ** 6)
        assert sess.run(y, {limit: 2.0}) == pytest.approx(2.25)
    z = tf.while_loop(lambda x: x < limit, lambda x: x * 1.5, [tf.constant(1.0)],
                      return_same_structure=True)
    assert isinstance(z, list) and len(z) == 1


def test_nested_structures_and_maximum_iterations():
    Pair = collections.namedtuple("Pair", ["a", "b"])
    init = (tf.constant(0), {"p": Pair(tf.constant(1.0), tf.constant(2.0))})

    def body(i, d):
        return i + 1, {"p": Pair(d["p"].a + d["p"].b, d["p"].b * 2.0)}

    i, d = tf.while_loop(lambda i, d: i < 100, body, init, maximum_iterations=3)
    assert isinstance(d["p"], Pair)
    with tf.Session() as sess:
        vi, va, vb = sess.run([i, d["p"].a, d["p"].b])
    assert vi == 3
    # a: 1 -> 3 -> 7 -> 15, b: 2 -> 4 -> 8 -> 16
    assert (va, vb) == (15.0, 16.0)


def test_maximum_iterations_from_a_tensor():
    bound = tf.placeholder(tf.int32, [])
    x = tf.while_loop(lambda x: x < 100.0, lambda x: x * 2.0, [tf.constant(1.0)],
                      maximum_iterations=bound)
    i, y = tf.while_loop(lambda i, y: i < 10, lambda i, y: (i + 1, y + 1.0),
                         (tf.constant(0), tf.constant(0.0)), maximum_iterations=bound)
    with tf.Session() as sess:
        assert sess.run(x, {bound: 3}) == 8.0
        assert sess.run(x, {bound: 50}) == 128.0  # cond stops it first
        assert sess.run([i, y], {bound: 4}) == [4, 4.0]


def test_shape_invariants():
    def body(i, x):
        return i + 1, tf.concat([x, x], 0)

    with pytest.raises(Exception, match="shape_invariants"):
        tf.while_loop(lambda i, x: i < 3, body, [tf.constant(0), tf.constant([1.0])])
    i, x = tf.while_loop(lambda i, x: i < 3, body, [tf.constant(0), tf.constant([1.0])],
                         shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    assert x.shape.as_list() == [None]
    with tf.Session() as sess:
        assert sess.run(x).shape == (8,)


def test_fetching_inside_the_loop_is_an_error():
    inside = []

    def body(x):
        y = x * 2.0
        inside.append(y)
        return y

    tf.while_loop(lambda x: x < 10.0, body, [tf.constant(1.0)])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="only inside the loop"):
            sess.run(inside[0])


def test_gradient_of_a_power_loop():
    x = tf.placeholder(tf.float64, [])
    _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * x),
                         [tf.constant(0), tf.constant(1.0, tf.float64)])
    (dx,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        vy, vdx = sess.run([y, dx], {x: 1.5})
    assert vy == pytest.approx(1.5 ** 4)
    assert vdx == pytest.approx(4 * 1.5 ** 3)


def test_rnn_trains_through_an_optimizer():
    # h_{t+1} = tanh(h_t W + x_t): fit W so that the final h matches a target.
    rng = np.random.RandomState(0)
    xs = tf.constant(rng.uniform(-1, 1, (5, 4, 3)).astype(np.float32))
    target = tf.constant(rng.uniform(-0.5, 0.5, (4, 3)).astype(np.float32))
    w = tf.get_variable("w", [3, 3], initializer=tf.zeros_initializer())

    def body(t, h):
        return t + 1, tf.tanh(tf.matmul(h, w) + tf.gather(xs, t))

    _, h = tf.while_loop(lambda t, h: t < 5, body, [tf.constant(0), tf.zeros([4, 3])])
    loss = tf.reduce_mean(tf.square(h - target))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(100):
            sess.run(train)
        last = sess.run(loss)
    assert last < 0.5 * first


def test_map_fn():
    elems = tf.placeholder(tf.float32, [None, 2])
    squares = tf.map_fn(lambda x: x * x, elems)
    sums = tf.map_fn(lambda x: tf.reduce_sum(x), elems)
    pairs = tf.map_fn(lambda p: (p[0] + p[1], p[0] * p[1]), (elems, elems),
                      dtype=(tf.float32, tf.float32))
    (grad,) = tf.gradients(tf.reduce_sum(squares), [elems])
    data = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    with tf.Session() as sess:
        vs, vsum, (va, vm), vg = sess.run([squares, sums, pairs, grad], {elems: data})
        empty = sess.run(squares, {elems: np.zeros((0, 2), np.float32)})
    np.testing.assert_allclose(vs, data * data)
    np.testing.assert_allclose(vsum, data.sum(1))
    np.testing.assert_allclose(va, 2 * data)
    np.testing.assert_allclose(vm, data * data)
    np.testing.assert_allclose(vg, 2 * data)
    assert empty.shape == (0, 2)
    assert squares.shape.as_list() == [None, 2]


def test_scan_and_folds():
    elems = tf.constant([1.0, 2.0, 3.0, 4.0])
    cumsum = tf.scan(lambda a, x: a + x, elems)
    from_ten = tf.scan(lambda a, x: a + x, elems, initializer=tf.constant(10.0))
    backwards = tf.scan(lambda a, x: a + x, elems, reverse=True)
    left = tf.foldl(lambda a, x: a * 10.0 + x, elems)
    right = tf.foldr(lambda a, x: a * 10.0 + x, elems)
    with tf.Session() as sess:
        vc, vt, vb, vl, vr = sess.run([cumsum, from_ten, backwards, left, right])
    np.testing.assert_allclose(vc, [1, 3, 6, 10])
    np.testing.assert_allclose(vt, [11, 13, 16, 20])
    np.testing.assert_allclose(vb, [10, 9, 7, 4])
    assert vl == 1234.0
    assert vr == 4321.0


def test_saver_meta_graph_round_trip(tmp_path):
    w = tf.Variable(2.0, name="w")
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w),
                         [tf.constant(0), tf.constant(1.0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    name = y.name
    tf.reset_default_graph()
    with tf.Session() as sess:
        tf.train.import_meta_graph(path + ".meta").restore(sess, path)
        graph = tf.get_default_graph()
        y2 = graph.get_tensor_by_name(name)
        (dw,) = tf.gradients(y2, [graph.get_tensor_by_name("w:0")])
        assert sess.run([y2, dw]) == [8.0, 12.0]  # w^3 and 3 w^2


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
def test_dynamic_rnn_matches_numpy_and_trains(kind):
    rng = np.random.RandomState(1)
    data = rng.uniform(-1, 1, (2, 4, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4, 3])
    lengths = tf.placeholder(tf.int32, [None])
    cell = {"rnn": tf.nn.rnn_cell.BasicRNNCell, "gru": tf.nn.rnn_cell.GRUCell,
            "lstm": tf.nn.rnn_cell.BasicLSTMCell}[kind](5)
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    assert outputs.shape.as_list() == [None, 4, 5]
    h = state.h if kind == "lstm" else state
    loss = tf.reduce_mean(tf.square(h - 0.5))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    feed = {x: data, lengths: [4, 2]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, final, weights = sess.run([outputs, h, tf.trainable_variables()], feed)
        first = sess.run(loss, feed)
        for _ in range(30):
            sess.run(train, feed)
        last = sess.run(loss, feed)
    # The same recurrence in numpy, TF's formulas, rows stopping at their lengths.
    for row, length in enumerate([4, 2]):
        hn, cn = np.zeros(5), np.zeros(5)
        for t in range(4):
            xh = np.concatenate([data[row, t], hn])
            if kind == "rnn":
                new_h, new_c = np.tanh(xh @ weights[0] + weights[1]), cn
            elif kind == "gru":
                r, u = np.split(_sigmoid(xh @ weights[0] + weights[1]), 2)
                c = np.tanh(np.concatenate([data[row, t], r * hn]) @ weights[2] + weights[3])
                new_h, new_c = u * hn + (1 - u) * c, cn
            else:
                i, j, f, o = np.split(xh @ weights[0] + weights[1], 4)
                new_c = cn * _sigmoid(f + 1.0) + _sigmoid(i) * np.tanh(j)
                new_h = np.tanh(new_c) * _sigmoid(o)
            if t < length:
                hn, cn = new_h, new_c
                np.testing.assert_allclose(out[row, t], hn, rtol=1e-4, atol=1e-5)
            else:
                np.testing.assert_allclose(out[row, t], 0)
        np.testing.assert_allclose(final[row], hn, rtol=1e-4, atol=1e-5)
    assert last < first


def test_multi_rnn_cell_stacks_cells_with_tf_names():
    rng = np.random.RandomState(2)
    data = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3, 4])
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicRNNCell(5),
                                        tf.nn.rnn_cell.BasicLSTMCell(2)])
    assert cell.state_size == (5, (2, 2)) and cell.output_size == 2
    outputs, (s0, s1) = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    names = [v.op.name for v in tf.trainable_variables()]
    assert names == ["rnn/multi_rnn_cell/cell_0/basic_rnn_cell/kernel",
                     "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/bias",
                     "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
                     "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, h0, h1, w = sess.run([outputs, s0, s1.h, tf.trainable_variables()], {x: data})
    for row in range(2):
        a, c, h = np.zeros(5), np.zeros(2), np.zeros(2)
        for t in range(3):
            a = np.tanh(np.concatenate([data[row, t], a]) @ w[0] + w[1])
            i, j, f, o = np.split(np.concatenate([a, h]) @ w[2] + w[3], 4)
            c = c * _sigmoid(f + 1.0) + _sigmoid(i) * np.tanh(j)
            h = np.tanh(c) * _sigmoid(o)
            np.testing.assert_allclose(out[row, t], h, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(h0[row], a, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(h1[row], h, rtol=1e-4, atol=1e-5)
    same = tf.nn.rnn_cell.BasicRNNCell(3)
    with pytest.raises(ValueError, match="same cell object twice"):
        tf.nn.rnn_cell.MultiRNNCell([same, same])


def test_dropout_wrapper_drops_outputs_not_the_state():
    rng = np.random.RandomState(3)
    data = rng.uniform(-1, 1, (2, 6, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 6, 3])
    keep = tf.placeholder_with_default(0.5, [])
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicRNNCell(8), output_keep_prob=keep)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    assert [v.op.name for v in tf.trainable_variables()] == ["rnn/basic_rnn_cell/kernel",
                                                            "rnn/basic_rnn_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, final, w = sess.run([outputs, state, tf.trainable_variables()], {x: data})
        kept, _ = sess.run([outputs, state], {x: data, keep: 1.0})
    h = np.zeros((2, 8))
    for t in range(6):
        h = np.tanh(np.concatenate([data[:, t], h], 1) @ w[0] + w[1])
        np.testing.assert_allclose(kept[:, t], h, rtol=1e-4, atol=1e-5)
        # Each output is dropped (0) or kept and scaled by 1 / 0.5.
        dropped = np.isclose(out[:, t], 0, atol=1e-7)
        np.testing.assert_allclose(out[:, t][~dropped], 2 * h[~dropped], rtol=1e-4, atol=1e-5)
    assert 0 < np.mean(np.isclose(out, 0, atol=1e-7)) < 1
    np.testing.assert_allclose(final, h, rtol=1e-4, atol=1e-5)  # the state is not dropped
    with pytest.raises(NotImplementedError, match="state_keep_prob"):
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), state_keep_prob=0.5)


def test_reverse_sequence_by_hand():
    x = tf.constant([[1, 2, 3, 4], [5, 6, 7, 8]])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.reverse_sequence(x, [3, 1], seq_axis=1)),
                                      [[3, 2, 1, 4], [5, 6, 7, 8]])
        # Time-major: the sequences run down the columns.
        np.testing.assert_array_equal(
            sess.run(tf.reverse_sequence(tf.transpose(x), [2, 4], seq_axis=0, batch_axis=1)),
            [[2, 8], [1, 7], [3, 6], [4, 5]])


@pytest.mark.parametrize("time_major", [False, True])
def test_bidirectional_dynamic_rnn_matches_numpy(time_major):
    rng = np.random.RandomState(4)
    data = rng.uniform(-1, 1, (2, 4, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4, 3])
    inputs = tf.transpose(x, [1, 0, 2]) if time_major else x
    (out_fw, out_bw), (s_fw, s_bw) = tf.nn.bidirectional_dynamic_rnn(
        tf.nn.rnn_cell.BasicRNNCell(3), tf.nn.rnn_cell.BasicRNNCell(2), inputs,
        sequence_length=[4, 2], dtype=tf.float32, time_major=time_major)
    if time_major:
        out_fw, out_bw = tf.transpose(out_fw, [1, 0, 2]), tf.transpose(out_bw, [1, 0, 2])
    assert [v.op.name for v in tf.trainable_variables()] == [
        "bidirectional_rnn/fw/basic_rnn_cell/kernel", "bidirectional_rnn/fw/basic_rnn_cell/bias",
        "bidirectional_rnn/bw/basic_rnn_cell/kernel", "bidirectional_rnn/bw/basic_rnn_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fw, bw, sf, sb, w = sess.run([out_fw, out_bw, s_fw, s_bw, tf.trainable_variables()],
                                     {x: data})
    for row, length in enumerate([4, 2]):
        h = np.zeros(3)
        for t in range(length):
            h = np.tanh(np.concatenate([data[row, t], h]) @ w[0] + w[1])
            np.testing.assert_allclose(fw[row, t], h, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sf[row], h, rtol=1e-4, atol=1e-5)
        g = np.zeros(2)
        for t in reversed(range(length)):  # the backward cell reads the row from its end
            g = np.tanh(np.concatenate([data[row, t], g]) @ w[2] + w[3])
            np.testing.assert_allclose(bw[row, t], g, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sb[row], g, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(fw[row, length:], 0)
        np.testing.assert_allclose(bw[row, length:], 0)


def test_static_rnn_unrolls_the_cell():
    rng = np.random.RandomState(5)
    data = rng.uniform(-1, 1, (3, 2, 4)).astype(np.float32)  # [time, batch, depth]
    steps = [tf.constant(data[t]) for t in range(3)]
    outputs, state = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(3), steps,
                                      sequence_length=[3, 1], dtype=tf.float32)
    assert len(outputs) == 3
    assert [v.op.name for v in tf.trainable_variables()] == ["rnn/basic_lstm_cell/kernel",
                                                            "rnn/basic_lstm_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, final_h, w = sess.run([outputs, state.h, tf.trainable_variables()])
    for row, length in enumerate([3, 1]):
        c, h = np.zeros(3), np.zeros(3)
        for t in range(3):
            if t < length:
                i, j, f, o = np.split(np.concatenate([data[t, row], h]) @ w[0] + w[1], 4)
                c = c * _sigmoid(f + 1.0) + _sigmoid(i) * np.tanh(j)
                h = np.tanh(c) * _sigmoid(o)
                np.testing.assert_allclose(out[t][row], h, rtol=1e-4, atol=1e-5)
            else:
                np.testing.assert_allclose(out[t][row], 0)
        np.testing.assert_allclose(final_h[row], h, rtol=1e-4, atol=1e-5)


def test_a_loop_inside_a_cond_runs_only_when_taken():
    # (A cond inside a loop's body: test_control_flow.py.)
    # A loop inside a cond's branch runs only when that branch is taken.
    p = tf.placeholder(tf.bool, [])
    z = tf.cond(p, lambda: tf.while_loop(lambda v: v < 8.0, lambda v: v * 2.0,
                                         [tf.constant(1.0)]),
                lambda: tf.constant(-1.0))
    with tf.Session() as sess:
        assert sess.run(z, {p: True}) == 8.0
        assert sess.run(z, {p: False}) == -1.0
