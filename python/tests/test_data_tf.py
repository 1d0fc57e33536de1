"""tf.data's sources and transformations with the element orders TF 1.15 documents:
zip, concatenate, interleave / flat_map, padded_batch, from_generator, range / take /
skip, list_files + TextLineDataset, cache. The expected sequences are TF's docstring
examples."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _elements(dataset):
    """Every element of `dataset`, as Python values (lists for arrays, ints, bytes)."""
    def py(v):
        if isinstance(v, dict):
            return {k: py(x) for k, x in v.items()}
        if isinstance(v, (tuple, list)):
            return tuple(py(x) for x in v)
        return np.asarray(v).tolist()
    nxt = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        while True:
            try:
                out.append(py(sess.run(nxt)))
            except tf.errors.OutOfRangeError:
                return out


R = tf.data.Dataset.range


def test_range_take_skip():
    assert _elements(R(5)) == [0, 1, 2, 3, 4]
    assert _elements(R(2, 5)) == [2, 3, 4]
    assert _elements(R(1, 5, 2)) == [1, 3]
    assert _elements(R(1, 5, -2)) == []
    assert _elements(R(5, 1, -2)) == [5, 3]
    assert _elements(R(10).skip(3).take(4)) == [3, 4, 5, 6]
    assert _elements(R(10).take(-1)) == list(range(10))
    assert _elements(R(10).skip(-1)) == []


def test_zip():
    a, b = R(1, 4), R(4, 7)
    assert _elements(tf.data.Dataset.zip((a, b))) == [(1, 4), (2, 5), (3, 6)]
    assert _elements(tf.data.Dataset.zip((b, a))) == [(4, 1), (5, 2), (6, 3)]
    c = R(7, 13).batch(2)
    d = R(13, 15)
    # The zipped datasets may have any nested structure; the shortest ends it.
    assert _elements(tf.data.Dataset.zip((a, b, c))) == [
        (1, 4, [7, 8]), (2, 5, [9, 10]), (3, 6, [11, 12])]
    assert _elements(tf.data.Dataset.zip((a, d))) == [(1, 13), (2, 14)]
    pairs = tf.data.Dataset.zip((a, b))
    nested = tf.data.Dataset.zip({"p": pairs, "d": d})
    assert nested.output_types == {"p": (tf.int64, tf.int64), "d": tf.int64}
    assert _elements(nested) == [{"p": (1, 4), "d": 13}, {"p": (2, 5), "d": 14}]


def test_concatenate():
    a, b = R(1, 4), R(4, 8)
    assert _elements(a.concatenate(b)) == [1, 2, 3, 4, 5, 6, 7]


def test_interleave_order_is_tfs():
    a = R(1, 6)
    # TF's docstring: cycle_length=2, block_length=4 over from_tensors(x).repeat(6).
    ds = a.interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
                      cycle_length=2, block_length=4)
    assert _elements(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                             3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    ds = a.interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(3),
                      cycle_length=4, block_length=2)
    assert _elements(ds) == [1, 1, 2, 2, 3, 3, 4, 4, 1, 2, 3, 4, 5, 5, 5]
    # The same order with the open datasets prefetching on threads.
    ds = a.interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
                      cycle_length=2, block_length=4, num_parallel_calls=2)
    assert _elements(ds)[:12] == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2]
    # A Python int from the element: range(x).
    ds = R(1, 4).interleave(lambda x: tf.data.Dataset.range(x), cycle_length=3)
    assert _elements(ds) == [0, 0, 0, 1, 1, 2]


def test_flat_map():
    a = tf.data.Dataset.from_tensor_slices(np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]]))
    ds = a.flat_map(lambda x: tf.data.Dataset.from_tensor_slices(x + 1))
    assert _elements(ds) == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert ds.output_shapes.as_list() == []


def test_interleave_over_files(tmp_path):
    for i in range(3):
        (tmp_path / ("f%d.txt" % i)).write_text("".join("%d-%d\n" % (i, j) for j in range(i + 2)))
    files = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
    assert _elements(files) == [str(tmp_path / ("f%d.txt" % i)).encode() for i in range(3)]
    lines = files.interleave(tf.data.TextLineDataset, cycle_length=2, block_length=1)
    # TF's order: a slot whose file ends passes its turn on; the next file opens in it at
    # its next turn.
    assert _elements(lines) == [b"0-0", b"1-0", b"0-1", b"1-1", b"1-2", b"2-0", b"2-1",
                                b"2-2", b"2-3"]
    shuffled = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), seed=3)
    assert sorted(_elements(shuffled)) == _elements(files)
    with pytest.raises(tf.errors.InvalidArgumentError, match="no files match"):
        tf.data.Dataset.list_files(str(tmp_path / "*.csv"))


def _ragged():
    """TF's padded_batch docstring input: [1], [2, 2], [3, 3, 3], [4, 4, 4, 4]."""
    def gen():
        for x in range(1, 5):
            yield [x] * x
    return tf.data.Dataset.from_generator(gen, tf.int64, tf.TensorShape([None]))


def test_padded_batch():
    a = _ragged()
    assert _elements(a.padded_batch(2, padded_shapes=[None])) == [
        [[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert _elements(a.padded_batch(2, padded_shapes=[5])) == [
        [[1, 0, 0, 0, 0], [2, 2, 0, 0, 0]], [[3, 3, 3, 0, 0], [4, 4, 4, 4, 0]]]
    assert _elements(a.padded_batch(2, padded_shapes=[None], padding_values=np.int64(-1))) == [
        [[1, -1], [2, 2]], [[3, 3, 3, -1], [4, 4, 4, 4]]]
    assert _elements(a.padded_batch(3, drop_remainder=True)) == [
        [[1, 0, 0], [2, 2, 0], [3, 3, 3]]]
    # Per component of a structure, with a string component padded with b"".
    pairs = tf.data.Dataset.zip((a, tf.data.Dataset.from_tensor_slices(
        np.array([b"a", b"b", b"c", b"d"], dtype=object))))
    batches = pairs.padded_batch(2, padded_shapes=([None], []),
                                 padding_values=(np.int64(9), b""))
    assert _elements(batches)[0] == ([[1, 9], [2, 2]], [b"a", b"b"])
    with pytest.raises(ValueError, match="structure"):
        pairs.padded_batch(2, padded_shapes=[None])


def test_from_generator():
    def gen():
        i = 1
        while True:
            yield (i, [1] * i)
            i += 1
    ds = tf.data.Dataset.from_generator(gen, (tf.int64, tf.int64),
                                        (tf.TensorShape([]), tf.TensorShape([None])))
    assert ds.output_shapes[1].as_list() == [None]
    assert _elements(ds.take(3)) == [(1, [1]), (2, [1, 1]), (3, [1, 1, 1])]
    # args, a dict structure, and a fresh generator per iterator.
    ds = tf.data.Dataset.from_generator(lambda n: ({"v": float(k)} for k in range(n)),
                                        {"v": tf.float32}, args=(3,))
    assert _elements(ds.repeat(2)) == [{"v": v} for v in [0.0, 1.0, 2.0] * 2]


def test_from_generator_errors_arrive_in_python():
    def bad():
        yield 1
        raise KeyError("from the generator")
    ds = tf.data.Dataset.from_generator(bad, tf.int64)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == 1
        with pytest.raises(KeyError, match="from the generator"):
            sess.run(nxt)
    wrong = tf.data.Dataset.from_generator(lambda: iter([[1, 2]]), tf.int64, tf.TensorShape([3]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _elements(wrong)


def test_cache_and_repeat():
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)
    ds = tf.data.Dataset.from_generator(gen, tf.int64).cache().repeat(3)
    assert _elements(ds) == [0, 1, 2] * 3
    assert len(calls) == 1  # later passes read the cache


def test_generators_on_pipeline_threads_and_a_session_closed_mid_stream():
    # The generator runs on Prefetch's worker (and interleave's slot threads), each call
    # taking the GIL; closing the session with a worker mid-call must not deadlock.
    import itertools
    ds = tf.data.Dataset.from_generator(itertools.count, tf.int64).map(lambda x: x * 2)
    nxt = ds.prefetch(4).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(nxt) for _ in range(3)] == [0, 2, 4]
    ds = R(4).interleave(lambda x: tf.data.Dataset.from_generator(lambda: iter(range(3)),
                                                                  tf.int64),
                         cycle_length=2, num_parallel_calls=2)
    assert _elements(ds) == [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]


def test_interleave_over_placeholders_says_why_not():
    names = tf.data.Dataset.from_tensor_slices(tf.placeholder(tf.string, [None]))
    with pytest.raises(NotImplementedError, match="dataset of placeholders"):
        names.interleave(tf.data.TextLineDataset, cycle_length=2)
