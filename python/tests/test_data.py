"""tf.data: from_tensor_slices over numpy arrays without a copy and over placeholders
(the 2 GB workaround), map traced once into graph ops, the transformations, iterators,
TFRecordDataset."""
import os
import struct
import sys

import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _drain(sess, next_element):
    out = []
    while True:
        try:
            out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError:
            return out


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_from_tensor_slices_over_numpy_is_not_a_copy_and_keeps_the_array_alive():
    n = 64 << 20  # 256 MiB of float32
    big = np.ones(n, np.float32).reshape(-1, 1024)
    big[:, 0] = np.arange(big.shape[0])
    refs = sys.getrefcount(big)
    before = _rss_bytes()
    ds = tf.data.Dataset.from_tensor_slices(big).batch(2)
    assert sys.getrefcount(big) > refs  # the dataset holds the array
    del big  # the dataset keeps it alive
    it = ds.make_one_shot_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        first = sess.run(x)
        second = sess.run(x)
    grown = _rss_bytes() - before
    np.testing.assert_array_equal(first[:, 0], [0, 1])
    np.testing.assert_array_equal(second[:, 0], [2, 3])
    assert grown < (32 << 20), "RSS grew by %d bytes: the array was copied" % grown


def test_a_dataset_releases_its_arrays():
    import gc
    a = np.ones((10, 4), np.float32)
    refs = sys.getrefcount(a)
    ds = tf.data.Dataset.from_tensor_slices(a).batch(2)
    assert sys.getrefcount(a) > refs
    del ds
    gc.collect()
    assert sys.getrefcount(a) == refs


def test_tuples_dicts_and_transformations():
    features = {"a": np.arange(10, dtype=np.int64), "b": np.arange(10, dtype=np.float32) * 2}
    labels = np.arange(10, dtype=np.int32) % 3
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    assert ds.output_types == ({"a": tf.int64, "b": tf.float32}, tf.int32)
    ds = ds.skip(1).take(8).batch(3).repeat(2).prefetch(2)
    f, l = ds.make_one_shot_iterator().get_next()
    assert f["b"].shape.as_list() == [None]
    with tf.Session() as sess:
        out = _drain(sess, (f, l))
    assert len(out) == 6
    np.testing.assert_array_equal(out[0][0]["a"], [1, 2, 3])
    np.testing.assert_array_equal(out[2][0]["b"], [14.0, 16.0])
    np.testing.assert_array_equal(out[3][1], [1, 2, 0])


def test_map_is_traced_once_into_graph_ops():
    calls = []

    def fn(x, y):
        calls.append(1)
        return {"sum": x + tf.cast(y, tf.float32), "sq": tf.square(x)}

    ds = tf.data.Dataset.from_tensor_slices((np.arange(100, dtype=np.float32),
                                             np.arange(100, dtype=np.int32)))
    ds = ds.map(fn, num_parallel_calls=2).filter(lambda e: e["sq"] < 50.0).batch(4)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        out = _drain(sess, nxt)
    assert len(calls) == 1  # traced once: no Python call per element
    np.testing.assert_allclose(np.concatenate([o["sum"] for o in out]), 2 * np.arange(8))
    np.testing.assert_allclose(np.concatenate([o["sq"] for o in out]), np.arange(8) ** 2)


def test_placeholders_and_initializable_iterator_the_2gb_workaround():
    x_ph = tf.placeholder(tf.float32, [None, 2])
    y_ph = tf.placeholder(tf.int64, [None])
    it = tf.data.Dataset.from_tensor_slices((x_ph, y_ph)).shuffle(8, seed=1).batch(5) \
        .make_initializable_iterator()
    x, y = it.get_next()
    xs = np.arange(20, dtype=np.float32).reshape(10, 2)
    ys = np.arange(10, dtype=np.int64)
    with tf.Session() as sess:
        for _ in range(2):  # re-initialization restarts over the newly fed arrays
            sess.run(it.initializer, feed_dict={x_ph: xs, y_ph: ys})
            out = _drain(sess, (x, y))
            assert [len(b[1]) for b in out] == [5, 5]
            got = np.concatenate([b[1] for b in out])
            assert sorted(got) == list(range(10))
            np.testing.assert_array_equal(np.concatenate([b[0] for b in out])[:, 0], got * 2)
        with pytest.raises(tf.errors.OpError):
            sess.run(x_ph * 2)  # the placeholders are only read by the initializer


def test_uninitialized_iterator_is_an_error():
    ph = tf.placeholder(tf.float32, [None])
    it = tf.data.Dataset.from_tensor_slices(ph).make_initializable_iterator()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(it.get_next())


def test_range_reinitializable_iterator():
    train = tf.data.Dataset.range(5)
    evald = tf.data.Dataset.range(10, 12)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.make_initializer(train))
        assert _drain(sess, nxt) == [0, 1, 2, 3, 4]
        sess.run(it.make_initializer(evald))
        assert _drain(sess, nxt) == [10, 11]


def _tfrecord(path, records):
    def masked_crc(data):
        # crc32c, as TFRecord frames use it.
        crc = 0xFFFFFFFF
        for b in data:
            crc ^= b
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
        crc ^= 0xFFFFFFFF
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    with open(path, "wb") as f:
        for r in records:
            header = struct.pack("<Q", len(r))
            f.write(header + struct.pack("<I", masked_crc(header)) + r +
                    struct.pack("<I", masked_crc(r)))


def test_tfrecord_dataset(tmp_path):
    path = str(tmp_path / "data.tfrecord")
    _tfrecord(path, [b"alpha", b"beta", b"gamma"])
    nxt = tf.data.TFRecordDataset([path]).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert _drain(sess, nxt) == [b"alpha", b"beta", b"gamma"]


def test_repeat_count_from_a_placeholder():
    # TF 1.15's dataset.repeat(num_epochs) with num_epochs fed to the initializer.
    epochs = tf.placeholder(tf.int64, [], name="epochs")
    it = tf.data.Dataset.range(3).repeat(epochs).make_initializable_iterator()
    nxt = it.get_next()
    fixed = tf.data.Dataset.range(2).repeat(tf.constant(2)).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {epochs: 2})
        assert _drain(sess, nxt) == [0, 1, 2, 0, 1, 2]
        sess.run(it.initializer, {epochs: 0})
        assert _drain(sess, nxt) == []
        assert _drain(sess, fixed) == [0, 1, 0, 1]
        with pytest.raises(tf.errors.InvalidArgumentError, match="epochs"):
            sess.run(it.initializer)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64 scalar"):
        tf.data.Dataset.range(3).repeat(tf.placeholder(tf.float32, []))
    with pytest.raises(tf.errors.InvalidArgumentError, match="reads placeholder 'epochs'"):
        tf.data.Dataset.range(3).repeat(epochs).make_one_shot_iterator()
