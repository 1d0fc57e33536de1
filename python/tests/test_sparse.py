"""tf.SparseTensor and tf.VarLenFeature, TF1 spelling: parse_example / parse_single_example
layouts (hand-computed, as TF gives them), tf.sparse ops, sparse_placeholder feeds,
embedding_lookup_sparse, Datasets with sparse components (batch then parse, and parse
then batch), feature columns on sparse features, and canned / custom Estimators trained
from TFRecords written here."""
import struct

import numpy as np
import pytest

import loom.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


# --- tf.train.Example and TFRecord bytes, written by hand ------------------------------
def _varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def _field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _example(**features):
    """A serialized tf.Example: each value a list of bytes (bytes_list), floats
    (float_list) or ints (int64_list); an empty tuple () is an empty int64_list."""
    entries = b""
    for key, values in sorted(features.items()):
        if values and isinstance(values[0], bytes):
            feature = _field(1, b"".join(_field(1, v) for v in values))
        elif values and isinstance(values[0], float):
            feature = _field(2, _field(1, struct.pack("<%df" % len(values), *values)))
        else:
            feature = _field(3, _field(1, b"".join(_varint(v) for v in values)))
        entries += _field(1, _field(1, key.encode()) + _field(2, feature))
    return _field(1, entries)


def _tfrecord(path, records):
    def masked_crc(data):
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


RECORDS = [
    _example(ids=[3, 1, 4], tags=[b"a"], w=[0.5, 2.0], label=[1]),
    _example(ids=(), tags=[b"b", b"c"], label=[0]),         # empty ids, no w
    _example(ids=[7], label=[1]),                           # no tags
]
SPEC = {"ids": tf.VarLenFeature(tf.int64), "tags": tf.io.VarLenFeature(tf.string),
        "w": tf.VarLenFeature(tf.float32), "label": tf.FixedLenFeature([1], tf.int64)}


def test_parse_example_var_len_layout_is_tfs():
    serialized = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(serialized, SPEC)
    assert isinstance(parsed["ids"], tf.SparseTensor)
    assert parsed["ids"].dtype == tf.int64 and parsed["tags"].dtype == tf.string
    assert parsed["ids"].shape.as_list() == [None, None]
    assert parsed["label"].shape.as_list() == [None, 1]
    with tf.Session() as sess:
        out = sess.run(parsed, {serialized: np.array(RECORDS, dtype=object)})
    ids = out["ids"]
    assert isinstance(ids, tf.SparseTensorValue)
    # TF's layout: [row, position] row-major, dense_shape [batch, longest list].
    np.testing.assert_array_equal(ids.indices, [[0, 0], [0, 1], [0, 2], [2, 0]])
    np.testing.assert_array_equal(ids.values, [3, 1, 4, 7])
    np.testing.assert_array_equal(ids.dense_shape, [3, 3])
    np.testing.assert_array_equal(out["tags"].indices, [[0, 0], [1, 0], [1, 1]])
    assert list(out["tags"].values) == [b"a", b"b", b"c"]
    np.testing.assert_array_equal(out["tags"].dense_shape, [3, 2])
    np.testing.assert_array_equal(out["w"].indices, [[0, 0], [0, 1]])
    np.testing.assert_allclose(out["w"].values, [0.5, 2.0])
    np.testing.assert_array_equal(out["w"].dense_shape, [3, 2])
    np.testing.assert_array_equal(out["label"], [[1], [0], [1]])


def test_parse_single_example_is_rank_one():
    parsed = tf.parse_single_example(tf.constant(RECORDS[0]), SPEC)
    with tf.Session() as sess:
        out = sess.run(parsed)
    np.testing.assert_array_equal(out["ids"].indices, [[0], [1], [2]])
    np.testing.assert_array_equal(out["ids"].values, [3, 1, 4])
    np.testing.assert_array_equal(out["ids"].dense_shape, [3])
    np.testing.assert_array_equal(out["label"], [1])


def test_sparse_ops_and_placeholder():
    sp = tf.SparseTensor(indices=[[1, 0], [0, 2]], values=[5.0, 7.0], dense_shape=[2, 3])
    assert sp.shape.as_list() == [2, 3] and sp.dtype == tf.float32
    dense = tf.sparse.to_dense(sp, default_value=-1.0)
    ordered = tf.sparse.reorder(sp)
    rows = tf.sparse.reduce_sum(sp, axis=1)
    ph = tf.sparse_placeholder(tf.int64, shape=[None, None])
    fed = tf.sparse_tensor_to_dense(ph)
    with tf.Session() as sess:
        d, o, r, f = sess.run([dense, ordered, rows, fed], {ph: tf.SparseTensorValue(
            np.array([[0, 1], [1, 0]]), np.array([4, 9]), np.array([2, 2]))})
        fed_tuple = sess.run(fed, {ph: ([[1, 1]], [3], [2, 2])})
        assert sess.run(tf.sparse.to_dense(tf.SparseTensor([[0]], ["x"], [2]))).tolist() == \
            [b"x", b""]
    np.testing.assert_array_equal(d, [[-1, -1, 7], [5, -1, -1]])
    np.testing.assert_array_equal(o.indices, [[0, 2], [1, 0]])
    np.testing.assert_array_equal(o.values, [7, 5])
    np.testing.assert_array_equal(r, [7, 5])
    np.testing.assert_array_equal(f, [[0, 4], [9, 0]])
    np.testing.assert_array_equal(fed_tuple, [[0, 0], [0, 3]])
    # TF1's tf.sparse_to_dense(sparse_indices, output_shape, sparse_values, default).
    old_style = tf.sparse_to_dense([2, 0], [4], 1.5, default_value=-1.0)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(old_style), [1.5, -1, 1.5, -1])
    bad = tf.sparse.to_dense(tf.SparseTensor([[0, 5]], [1.0], [2, 3]))
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"indices\[0\] = \[0,5\] is outside"):
        sess.run(bad)


def test_embedding_lookup_sparse_combiners_and_sparse_training():
    table = np.array([[1, 2], [10, 20], [100, 200], [1000, 2000]], np.float32)
    params = tf.Variable(table, name="emb")
    ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([1, 3, 2], tf.int64), [3, 2])
    weights = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [1.0, 3.0, 2.0], [3, 2])
    mean = tf.nn.embedding_lookup_sparse(params, ids, None)
    total = tf.nn.embedding_lookup_sparse(params, ids, weights, combiner="sum")
    sqrtn = tf.nn.embedding_lookup_sparse(params, ids, weights, combiner="sqrtn")
    loss = tf.reduce_sum(total)
    (grad,) = tf.gradients(loss, [params])
    step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        m, t, s, g = sess.run([mean, total, sqrtn, grad])
        sess.run(step)
        after = sess.run(params)
    np.testing.assert_allclose(m, [[505, 1010], [0, 0], [100, 200]])
    np.testing.assert_allclose(t, [[3010, 6020], [0, 0], [200, 400]])
    np.testing.assert_allclose(s, [[3010 / np.sqrt(10), 6020 / np.sqrt(10)], [0, 0],
                                   [100, 200]], rtol=1e-6)
    # d loss / d row = the sum of the weights of the row's uses: row 1 once (1), row 3
    # once (3), row 2 once (2), row 0 never.
    np.testing.assert_allclose(g, [[0, 0], [1, 1], [2, 2], [3, 3]])
    np.testing.assert_allclose(after, table - 0.5 * g)


def _parse(serialized):
    features = tf.parse_example(serialized, SPEC)
    label = features.pop("label")
    return features, label


def test_dataset_batch_then_parse(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    _tfrecord(path, RECORDS)
    ds = tf.data.TFRecordDataset([path]).batch(2).map(_parse)
    assert ds.output_classes[0]["ids"] is tf.SparseTensor
    assert ds.output_types[0]["ids"] == tf.int64
    features, label = ds.make_one_shot_iterator().get_next()
    assert isinstance(features["tags"], tf.SparseTensor)
    with tf.Session() as sess:
        first = sess.run(features["ids"])
        second = sess.run(features["ids"])
    np.testing.assert_array_equal(first.indices, [[0, 0], [0, 1], [0, 2]])
    np.testing.assert_array_equal(first.dense_shape, [2, 3])
    np.testing.assert_array_equal(second.indices, [[0, 0]])
    np.testing.assert_array_equal(second.values, [7])
    np.testing.assert_array_equal(second.dense_shape, [1, 1])


def test_reinitializable_iterator_over_sparse_datasets(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    _tfrecord(path, RECORDS)
    train = tf.data.TFRecordDataset([path]).batch(3).map(_parse)
    evald = tf.data.TFRecordDataset([path]).skip(2).batch(3).map(_parse)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes,
                                         output_classes=train.output_classes)
    features, _ = it.get_next()
    assert isinstance(features["ids"], tf.SparseTensor)
    with tf.Session() as sess:
        sess.run(it.make_initializer(train))
        assert sess.run(features["ids"]).values.tolist() == [3, 1, 4, 7]
        sess.run(it.make_initializer(evald))
        assert sess.run(features["ids"]).indices.tolist() == [[0, 0]]


def test_dataset_parse_then_batch_batches_sparse_components(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    _tfrecord(path, RECORDS)

    def parse_one(record):
        return tf.parse_single_example(record, SPEC)
    ds = tf.data.TFRecordDataset([path]).map(parse_one).batch(3)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        out = sess.run(nxt)
    # The same SparseTensor as parsing the batch at once.
    np.testing.assert_array_equal(out["ids"].indices, [[0, 0], [0, 1], [0, 2], [2, 0]])
    np.testing.assert_array_equal(out["ids"].values, [3, 1, 4, 7])
    np.testing.assert_array_equal(out["ids"].dense_shape, [3, 3])
    np.testing.assert_array_equal(out["tags"].indices, [[0, 0], [1, 0], [1, 1]])
    np.testing.assert_array_equal(out["tags"].dense_shape, [3, 2])
    np.testing.assert_array_equal(out["label"], [[1], [0], [1]])
    with pytest.raises(NotImplementedError, match="component 'ids' is a SparseTensor"):
        tf.data.TFRecordDataset([path]).map(parse_one).padded_batch(2, None)


def test_feature_columns_on_sparse_features():
    serialized = tf.constant(RECORDS)
    features = tf.parse_example(serialized, SPEC)
    ids = tf.feature_column.categorical_column_with_identity("ids", 8)
    tags = tf.feature_column.categorical_column_with_vocabulary_list("tags", ["a", "b", "c"])
    emb = tf.feature_column.embedding_column(ids, 2, initializer=tf.ones_initializer())
    dense = tf.feature_column.input_layer(features, [emb, tf.feature_column.indicator_column(
        tags)])
    logits = tf.feature_column.linear_model(features, [ids, tags])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        d, lg = sess.run([dense, logits])
    # Sorted by name: ids_embedding (mean of ones: 1, or 0 for no ids), tags_indicator.
    np.testing.assert_allclose(d, [[1, 1, 1, 0, 0], [0, 0, 0, 1, 1], [1, 1, 0, 0, 0]])
    np.testing.assert_allclose(lg, [[0], [0], [0]])
    numeric = tf.feature_column.numeric_column("w")
    with pytest.raises(tf.errors.InvalidArgumentError, match="'w' is a SparseTensor"):
        tf.feature_column.input_layer(features, [numeric])


def test_make_parse_example_spec_feeds_parse_example():
    fc = tf.feature_column
    ids = fc.categorical_column_with_identity("ids", 8)
    tags = fc.categorical_column_with_vocabulary_list("tags", ["a", "b", "c"])
    columns = [fc.embedding_column(ids, 2), fc.indicator_column(tags),
               fc.numeric_column("label", dtype=tf.float32),
               fc.weighted_categorical_column(fc.categorical_column_with_hash_bucket(
                   "tags", 10), "w"),
               fc.bucketized_column(fc.numeric_column("x", shape=[2]), [0.0])]
    spec = fc.make_parse_example_spec(columns)
    assert spec == {"ids": tf.VarLenFeature(tf.int64), "tags": tf.VarLenFeature(tf.string),
                    "w": tf.VarLenFeature(tf.float32),
                    "label": tf.FixedLenFeature((1,), tf.float32),
                    "x": tf.FixedLenFeature((2,), tf.float32)}
    assert fc.make_parse_example_spec([fc.crossed_column(["tags", ids], 5)]) == {
        "tags": tf.VarLenFeature(tf.string), "ids": tf.VarLenFeature(tf.int64)}
    with pytest.raises(ValueError, match="different parse_spec for key ids"):
        fc.make_parse_example_spec([ids, fc.categorical_column_with_hash_bucket("ids", 5)])
    spec.pop("x")
    spec.pop("label")
    features = tf.parse_example(tf.constant(RECORDS), spec)
    dense = fc.input_layer(features, [fc.indicator_column(tags)])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dense), [[1, 0, 0], [0, 1, 1], [0, 0, 0]])


def _words_records(n, seed):
    """Label 1 when the list holds word "good" more often than "bad"."""
    rng = np.random.RandomState(seed)
    vocab = [b"good", b"bad", b"meh", b"the"]
    records = []
    for _ in range(n):
        k = rng.randint(1, 5)
        words = [vocab[i] for i in rng.randint(0, 4, size=k)]
        label = int(words.count(b"good") > words.count(b"bad"))
        records.append(_example(words=words, ids=[int(i) for i in rng.randint(0, 6, size=k)],
                                label=[label]))
    return records


def _input_fn(path, epochs):
    spec = {"words": tf.VarLenFeature(tf.string), "ids": tf.VarLenFeature(tf.int64),
            "label": tf.FixedLenFeature([1], tf.int64)}

    def input_fn():
        ds = tf.data.TFRecordDataset([path]).repeat(epochs).batch(16)
        return ds.map(lambda s: (lambda f: (f, f.pop("label")))(tf.parse_example(s, spec)))
    return input_fn


def test_canned_estimators_train_on_var_len_features(tmp_path):
    path = str(tmp_path / "train.tfrecord")
    _tfrecord(path, _words_records(160, 0))
    words = tf.feature_column.categorical_column_with_vocabulary_list(
        "words", ["good", "bad", "meh", "the"])
    ids = tf.feature_column.categorical_column_with_identity("ids", 6)
    dnn = tf.estimator.DNNClassifier(
        hidden_units=[8], model_dir=str(tmp_path / "dnn"),
        feature_columns=[tf.feature_column.embedding_column(words, 4, combiner="sum"),
                         tf.feature_column.indicator_column(ids)],
        optimizer=tf.train.AdamOptimizer(0.05))
    dnn.train(_input_fn(path, 20))
    dnn_metrics = dnn.evaluate(_input_fn(path, 1))
    linear = tf.estimator.LinearClassifier(
        feature_columns=[tf.feature_column.categorical_column_with_hash_bucket("words", 50),
                         ids], model_dir=str(tmp_path / "linear"),
        optimizer=tf.train.FtrlOptimizer(0.5))
    linear.train(_input_fn(path, 20))
    linear_metrics = linear.evaluate(_input_fn(path, 1))
    # The counts of "good" vs "bad" decide the label: sums of embeddings / weights learn it.
    assert dnn_metrics["accuracy"] > 0.9, dnn_metrics
    assert linear_metrics["accuracy"] > 0.9, linear_metrics
    predictions = list(dnn.predict(_input_fn(path, 1)))
    assert len(predictions) == 160
    # Served from tf.Example records parsed with VarLenFeatures.
    receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        {"words": tf.VarLenFeature(tf.string), "ids": tf.VarLenFeature(tf.int64)})
    predictor = tf.contrib.predictor.from_saved_model(
        dnn.export_saved_model(str(tmp_path / "export"), receiver_fn))
    served = predictor({"examples": np.array(
        [_example(words=[b"good", b"good"], ids=[1]), _example(words=[b"bad"], ids=[2, 3])],
        dtype=object)})
    assert list(np.argmax(served["scores"], axis=1)) == [1, 0], served
    # Served from SparseTensorValues fed to sparse placeholders.
    raw_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"words": tf.sparse_placeholder(tf.string, [None, None]),
         "ids": tf.sparse_placeholder(tf.int64, [None, None])})
    raw = tf.contrib.predictor.from_saved_model(
        dnn.export_saved_model(str(tmp_path / "export_raw"), raw_fn))
    assert raw.input_keys == ["ids", "words"]
    served = raw({"words": tf.SparseTensorValue(np.array([[0, 0], [0, 1], [1, 0]]),
                                                np.array([b"good", b"good", b"bad"], object),
                                                np.array([2, 2])),
                  "ids": ([[0, 0], [1, 0], [1, 1]], [1, 2, 3], [2, 2])})
    assert list(np.argmax(served["scores"], axis=1)) == [1, 0], served


def test_custom_model_fn_gets_sparse_tensors(tmp_path):
    path = str(tmp_path / "train.tfrecord")
    _tfrecord(path, _words_records(32, 1))
    seen = {}

    def model_fn(features, labels, mode):
        seen["words"] = features["words"]
        table = tf.get_variable("table", [6, 1], initializer=tf.zeros_initializer())
        logits = tf.nn.embedding_lookup_sparse(table, features["ids"], None, combiner="sum")
        loss = tf.losses.sigmoid_cross_entropy(tf.cast(labels, tf.float32), logits)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "m"))
    est.train(_input_fn(path, 1))
    assert isinstance(seen["words"], tf.SparseTensor)
    assert est.get_variable_value("global_step") == 2
    assert np.abs(est.get_variable_value("table")).sum() > 0
