"""tf.TensorArray (python/loom/compat/v1/_tensor_array.py over loom/ops/tensor_array.h):
the seq2seq-style loops TF1 programs write with it, against float64 numpy references
(values and gradients), and TF 1.15's run-time errors."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")

T, B, D = 5, 2, 3


def _rnn_numpy(w, x):
    """The reference for the loop below: h_t = tanh(h_{t-1} W + x_t), h_0 = 0."""
    h = np.zeros((x.shape[1], w.shape[1]))
    out = []
    for t in range(x.shape[0]):
        h = np.tanh(h @ w + x[t])
        out.append(h)
    return np.stack(out)


def _numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (f(up) - f(down)) / (2 * eps)
    return g


def test_rnn_loop_reads_an_unstacked_input_and_stacks_its_outputs_with_gradients():
    rng = np.random.RandomState(0)
    w0 = rng.uniform(-0.8, 0.8, (D, D))
    xv = rng.uniform(-1, 1, (T, B, D))
    coeff = rng.uniform(-1, 1, (T, B, D))
    x = tf.placeholder(tf.float64, [T, B, D])
    w = tf.Variable(w0, name="w")
    inputs = tf.TensorArray(tf.float64, size=T).unstack(x)
    outputs = tf.TensorArray(tf.float64, size=T)  # no element_shape: the first write's

    def body(i, h, out):
        h = tf.tanh(tf.matmul(h, w) + inputs.read(i))
        return i + 1, h, out.write(i, h)

    _, _, outputs = tf.while_loop(lambda i, h, out: i < T, body,
                                  [tf.constant(0), tf.zeros([B, D], tf.float64), outputs])
    y = outputs.stack()
    assert y.shape.as_list() == [T, B, D]  # the element shape the loop's write inferred
    loss = tf.reduce_sum(y * coeff)
    gw, gx = tf.gradients(loss, [w, x])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        yv, gwv, gxv = sess.run([y, gw, gx], {x: xv})
    np.testing.assert_allclose(yv, _rnn_numpy(w0, xv), rtol=1e-12)
    np.testing.assert_allclose(
        gwv, _numeric_grad(lambda a: np.sum(_rnn_numpy(a, xv) * coeff), w0), rtol=1e-6)
    np.testing.assert_allclose(
        gxv, _numeric_grad(lambda a: np.sum(_rnn_numpy(w0, a) * coeff), xv), rtol=1e-6)


def test_dynamic_size_grows_to_a_length_known_only_at_run_time():
    # A decoder that emits until a fed length: TensorArray(size=0, dynamic_size=True).
    n = tf.placeholder(tf.int32, [])
    v = tf.placeholder(tf.float64, [2])

    def body(i, ta):
        return i + 1, ta.write(i, v * tf.cast(i + 1, tf.float64))

    _, ta = tf.while_loop(lambda i, ta: i < n, body,
                          [0, tf.TensorArray(tf.float64, size=0, dynamic_size=True)])
    stacked, size, last = ta.stack(), ta.size(), ta.read(n - 1)
    assert stacked.shape.as_list() == [None, 2]
    assert size.dtype == tf.int32
    grad = tf.gradients(tf.reduce_sum(stacked * stacked), v)[0]
    with tf.Session() as sess:
        for length in (1, 4):
            s, k, r, g = sess.run([stacked, size, last, grad], {n: length, v: [1.5, -2.0]})
            want = np.outer(np.arange(1, length + 1), [1.5, -2.0])
            np.testing.assert_allclose(s, want)
            np.testing.assert_allclose(r, want[-1])
            assert k == length
            # d/dv sum_i ((i+1) v)^2 = 2 v sum_i (i+1)^2
            np.testing.assert_allclose(
                g, 2 * np.array([1.5, -2.0]) * np.sum(np.arange(1, length + 1) ** 2.0))


def test_writes_in_reverse_order_gather_concat_and_read_many():
    x = tf.placeholder(tf.float64, [4, 2])
    ta = tf.TensorArray(tf.float64, size=4, element_shape=[2])

    def body(i, ta):
        return i + 1, ta.write(3 - i, tf.gather(x, i) * 2.0)

    _, ta = tf.while_loop(lambda i, ta: i < 4, body, [0, ta])
    stacked = ta.stack()
    gathered = ta.gather([3, 0, 3])
    concat = ta.concat()
    twice = ta.read(1) + ta.read(1)  # read-many (TF: clear_after_read=False)
    gx = tf.gradients(tf.reduce_sum(gathered) + tf.reduce_sum(twice * twice), x)[0]
    xv = np.arange(8.0).reshape(4, 2)
    with tf.Session() as sess:
        s, g, c, t, gxv = sess.run([stacked, gathered, concat, twice, gx], {x: xv})
    np.testing.assert_allclose(s, 2 * xv[::-1])
    np.testing.assert_allclose(g, 2 * xv[[0, 3, 0]])
    np.testing.assert_allclose(c, (2 * xv[::-1]).reshape(-1))
    np.testing.assert_allclose(t, 4 * xv[2])
    want = np.zeros((4, 2))
    want[0] += 2 * 2  # gathered reads index 3 (x[0]) twice, d/dx = 2 each
    want[3] += 2      # index 0 is x[3]
    want[2] += 2 * (4 * xv[2]) * 4  # d/dx (4x)^2 = 32 x
    np.testing.assert_allclose(gxv, want)


def test_a_tensor_array_outside_a_loop_and_its_static_shapes():
    ta = tf.TensorArray(tf.float32, size=3, element_shape=tf.TensorShape([None, 2]))
    ta = ta.write(0, [[1.0, 2.0]]).write(1, [[3.0, 4.0]]).write(2, tf.constant([[5.0, 6.0]]))
    assert ta.element_shape.as_list() == [1, 2]  # refined by the writes
    st = ta.stack()
    assert st.shape.as_list() == [3, 1, 2]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(st), [[[1, 2]], [[3, 4]], [[5, 6]]])
        assert sess.run(ta.size()) == 3


def _run_error(fetch, feed=None):
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(fetch, feed)
    return str(e.value)


def test_run_time_errors_are_tf_1_15s():
    i = tf.placeholder(tf.int32, [])
    ta = tf.TensorArray(tf.float32, size=3, tensor_array_name="foo").write(0, [1.0])
    # The same index twice.
    msg = _run_error(ta.write(i, [2.0]).stack(), {i: 0})
    assert "TensorArray foo: Could not write to TensorArray index 0 because it has already " \
           "been written to." in msg
    # An index that was never written, by read and by stack.
    msg = _run_error(ta.read(i), {i: 1})
    assert "TensorArray foo: Could not read from TensorArray index 1 because it has not yet " \
           "been written to." in msg
    assert "Could not read from TensorArray index 1 because it has not yet been written to" in \
        _run_error(ta.stack())
    # Outside a fixed-size array.
    assert "TensorArray foo: Tried to write to index 3 but array is not resizeable and size " \
           "is: 3" in _run_error(ta.write(i, [2.0]).stack(), {i: 3})
    assert "Tried to read from index 7 but array size is: 3" in _run_error(ta.read(i), {i: 7})
    # An element whose shape differs from the first (unknown until run time).
    p = tf.placeholder(tf.float32, [None])
    msg = _run_error(ta.write(1, p).stack(), {p: [1.0, 2.0]})
    assert "because the value shape is [2] which is incompatible with the TensorArray's " \
           "inferred element shape: [1]" in msg
    # unstack of the wrong length.
    q = tf.placeholder(tf.float32, [None, 2])
    msg = _run_error(tf.TensorArray(tf.float32, size=3, tensor_array_name="bar").unstack(q)
                     .stack(), {q: np.zeros((2, 2))})
    assert "TensorArray bar: Input value must have first dimension equal to the array size " \
           "(2 vs. 3)" in msg


def test_build_time_errors_name_the_array():
    ta = tf.TensorArray(tf.float32, size=2, tensor_array_name="acc")
    with pytest.raises(TypeError, match="TensorArray acc: TensorArray dtype is float32 but Op "
                                        "is trying to write dtype int32"):
        ta.write(0, tf.constant([1, 2]))
    ta = ta.write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"TensorArray acc: Inconsistent shapes"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"\(3 vs. 2\)"):
        tf.TensorArray(tf.float32, size=2).unstack(tf.zeros([3, 1]))
    with pytest.raises(ValueError, match="Size must be provided"):
        tf.TensorArray(tf.float32)
    with pytest.raises(NotImplementedError, match=r"tf.TensorArray.scatter is not supported"):
        ta.scatter([0], tf.zeros([1, 2]))
