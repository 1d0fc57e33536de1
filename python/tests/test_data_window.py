"""tf.data's window, reduce, group_by_window and bucket_by_sequence_length with TF1's
spelling, against hand-computed elements (TF 1.15's semantics); a map function that
ends the dataset (StopIteration in a py_func); and an Estimator stopped and resumed in
the middle of a window / a group seeing the batches of an uninterrupted run."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _drain(dataset):
    nxt = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        while True:
            try:
                out.append(sess.run(nxt))
            except tf.errors.OutOfRangeError:
                return out


def _mod(x, n):
    # x % n for x >= 0 (Loom lacks TF's FloorMod op, and so the % operator).
    return x - tf.div(x, n) * n


def _lists(values):
    return [np.asarray(v).tolist() for v in values]


def test_window_flat_map_batch():
    ds = tf.data.Dataset.range(7).window(3, shift=1, stride=2)
    got = _lists(_drain(ds.flat_map(lambda w: w.batch(3))))
    assert got == [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5], [4, 6], [5], [6]]
    ds = tf.data.Dataset.range(7).window(3, drop_remainder=True)
    assert _lists(_drain(ds.flat_map(lambda w: w.batch(3)))) == [[0, 1, 2], [3, 4, 5]]


def test_window_of_a_tuple_gives_a_tuple_of_datasets():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.arange(5, dtype=np.int64)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).window(2, shift=2)
    ds = ds.flat_map(lambda a, b: tf.data.Dataset.zip((a.batch(2), b.batch(2))))
    got = _drain(ds)
    assert [g[1].tolist() for g in got] == [[0, 1], [2, 3], [4]]
    np.testing.assert_array_equal(got[1][0], x[2:4])


def test_window_elements_are_datasets_not_tensors():
    with pytest.raises(TypeError, match="flat_map"):
        tf.data.Dataset.range(4).window(2).batch(2)


def test_reduce_returns_tensors():
    ds = tf.data.Dataset.range(1, 6)
    total, product = ds.reduce((np.int64(0), np.int64(1)),
                               lambda s, x: (s[0] + x, s[1] * x))
    count = ds.reduce(np.int64(0), lambda n, _: n + 1)
    with tf.Session() as sess:
        assert sess.run([total, product, count]) == [15, 120, 5]
        assert sess.run(total) == 15  # each run reads the dataset again


def test_reduce_over_placeholders_and_a_growing_state_shape():
    values = tf.placeholder(tf.float32, [None])
    ds = tf.data.Dataset.from_tensor_slices(values)
    total = ds.reduce(np.float32(0), lambda s, x: s + x)
    # The state grows by one element per element: its shape becomes unknown.
    seen = ds.reduce(np.zeros([0], np.float32),
                     lambda s, x: tf.concat([s, tf.reshape(x, [1])], 0))
    assert seen.shape.as_list() == [None]
    with tf.Session() as sess:
        assert sess.run(total, {values: [1.0, 2.5]}) == 3.5
        np.testing.assert_array_equal(sess.run(seen, {values: [4.0, 5.0, 6.0]}), [4, 5, 6])


def test_group_by_window():
    ds = tf.data.Dataset.range(10).apply(tf.data.experimental.group_by_window(
        key_func=lambda x: _mod(x, 3), reduce_func=lambda key, w: w.batch(2), window_size=2))
    # Full groups as they fill, then the rest in ascending key order.
    assert _lists(_drain(ds)) == [[0, 3], [1, 4], [2, 5], [6, 9], [7], [8]]


def test_group_by_window_with_window_size_func_and_the_key():
    ds = tf.data.Dataset.range(8).apply(tf.data.experimental.group_by_window(
        key_func=lambda x: _mod(x, 2),
        reduce_func=lambda key, w: w.batch(3).map(lambda x: x + 100),
        window_size_func=lambda key: key * 2 + 1))
    assert _lists(_drain(ds)) == [[100], [102], [104], [101, 103, 105], [106], [107]]
    with pytest.raises(ValueError, match="exactly one"):
        tf.data.experimental.group_by_window(lambda x: x, lambda k, w: w)(
            tf.data.Dataset.range(3))


def test_group_by_reducer_sums_and_counts_per_key():
    reducer = tf.data.experimental.Reducer(
        init_func=lambda key: (key, np.int64(0), np.int64(0)),
        reduce_func=lambda state, x: (state[0], state[1] + x, state[2] + 1),
        finalize_func=lambda key, total, count: {"key": key, "total": total, "count": count})
    ds = tf.data.Dataset.range(1, 11).apply(
        tf.data.experimental.group_by_reducer(lambda x: _mod(x, 3), reducer))
    got = _drain(ds)
    # Keys in ascending order: 0 -> 3, 6, 9; 1 -> 1, 4, 7, 10; 2 -> 2, 5, 8.
    assert [(g["key"], g["total"], g["count"]) for g in got] == [(0, 18, 3), (1, 22, 4),
                                                                 (2, 15, 3)]


def test_bucket_by_sequence_length_pads_per_bucket():
    lengths = [1, 5, 2, 6, 3, 7, 1, 2]

    def gen():
        for i, n in enumerate(lengths):
            yield np.full([n], i, np.int64)
    ds = tf.data.Dataset.from_generator(gen, tf.int64, [None])
    ds = ds.apply(tf.data.experimental.bucket_by_sequence_length(
        lambda x: tf.shape(x)[0], bucket_boundaries=[4], bucket_batch_sizes=[2, 2]))
    got = _drain(ds)
    # Bucket 0 (length < 4): elements 0, 2 then 4, 6; bucket 1: 1, 3. Left at the end, in
    # bucket order: 7 (bucket 0), then 5 (bucket 1).
    assert [g.shape for g in got] == [(2, 2), (2, 6), (2, 3), (1, 2), (1, 7)]
    np.testing.assert_array_equal(got[0], [[0, 0], [2, 2]])
    np.testing.assert_array_equal(got[2], [[4, 4, 4], [6, 0, 0]])


def test_stop_iteration_in_a_py_func_ends_the_dataset():
    # TF1: the py_func's StopIteration is an OutOfRange error, and map ends there.
    def stop_at_3(x):
        if x == 3:
            raise StopIteration
        return x * 10

    for parallel in (None, 2):
        ds = tf.data.Dataset.range(6).map(
            lambda x: tf.py_func(stop_at_3, [x], tf.int64), num_parallel_calls=parallel)
        assert _lists(_drain(ds)) == [0, 10, 20]
    # Any other exception is still an error (TF's UNKNOWN for a RuntimeError).
    def fail(x):
        raise RuntimeError("broken")
    nxt = tf.data.Dataset.range(2).map(
        lambda x: tf.py_func(fail, [x], tf.int64)).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnknownError, match="broken"):
            sess.run(nxt)


RECORDED = []


class _Recorder(tf.train.SessionRunHook):
    def __init__(self, tensor):
        self._tensor = tensor

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._tensor)

    def after_run(self, run_context, run_values):
        RECORDED.append(np.asarray(run_values.results).tolist())


def _model_fn(features, labels, mode):
    w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.cast(features, tf.float32) * w - 1.0))
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      training_hooks=[_Recorder(features)])


def _windows_input_fn():
    # A sliding window of 4 with shift 3: each window's batch of 2 leaves the window's
    # second half behind when a checkpoint is taken between the two.
    ds = tf.data.Dataset.range(1000).window(4, shift=3, drop_remainder=True)
    return ds.flat_map(lambda w: w.batch(2))


def _groups_input_fn():
    ds = tf.data.Dataset.range(1000).apply(tf.data.experimental.group_by_window(
        lambda x: _mod(x, 3), lambda key, w: w.batch(2), window_size=5))
    return ds


@pytest.mark.parametrize("input_fn", [_windows_input_fn, _groups_input_fn])
def test_training_resumes_mid_window_and_mid_group(tmp_path, input_fn):
    def train(model_dir, steps):
        del RECORDED[:]
        config = tf.estimator.RunConfig(model_dir=str(model_dir))
        tf.estimator.Estimator(_model_fn, config=config).train(input_fn, steps=steps)
        return list(RECORDED)
    whole = train(tmp_path / "whole", 11)
    parts = train(tmp_path / "parts", 5) + train(tmp_path / "parts", 6)
    assert parts == whole
    assert len(whole) == 11 and len({tuple(b) for b in whole}) == 11
