"""tf.layers, tf.losses, tf.metrics and tf.feature_column from Python: variable and scope
names as TF's, values against numpy, UPDATE_OPS, and a metric's update op used as a
tensor."""
import numpy as np
import pytest

import loom.compat.v1 as tf


def _run(graph, fetches, feed_dict=None, init_local=False):
    with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        if init_local:
            sess.run(tf.local_variables_initializer())
        return sess.run(fetches, feed_dict)


def test_dense_names_shapes_and_activation():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        h = tf.layers.dense(x, 4, activation=tf.nn.relu)
        out = tf.layers.dense(h, 2, kernel_initializer=tf.ones_initializer())
        names = sorted(v.name for v in tf.trainable_variables())
        assert names == ["dense/bias:0", "dense/kernel:0", "dense_1/bias:0",
                         "dense_1/kernel:0"]
        assert h.op.name.startswith("dense/")  # the activation sits in the layer's scope
        assert out.shape.as_list() == [None, 2]
        value = _run(graph, out, {x: np.ones((5, 3), np.float32)})
    assert value.shape == (5, 2)
    assert np.all(value >= 0)  # relu, then a kernel of ones and zero bias
    np.testing.assert_allclose(value[:, 0], value[:, 1])


def test_conv_pool_flatten_dropout():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 1])
        c = tf.layers.conv2d(x, filters=3, kernel_size=[3, 3], padding="same",
                             activation=tf.nn.relu)
        p = tf.layers.max_pooling2d(c, pool_size=[2, 2], strides=2)
        f = tf.layers.flatten(p)
        d = tf.layers.dropout(f, rate=0.5, training=False)
        assert c.shape.as_list() == [None, 8, 8, 3]
        assert p.shape.as_list() == [None, 4, 4, 3]
        assert f.shape.as_list() == [None, 48]
        image = np.random.RandomState(0).rand(2, 8, 8, 1).astype(np.float32)
        fv, dv = _run(graph, [f, d], {x: image})
    np.testing.assert_array_equal(fv, dv)  # not training: the identity
    with graph.as_default():
        with pytest.raises(NotImplementedError, match="channels_last"):
            tf.layers.conv2d(x, 1, 3, data_format="channels_first")


def test_batch_normalization_update_ops():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        y = tf.layers.batch_normalization(x, training=True)
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert len(updates) == 1
        data = np.array([[1, 2], [3, 6]], np.float32)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            out, _ = sess.run([y, updates], {x: data})
            mean = sess.run(graph.get_tensor_by_name("batch_normalization/moving_mean:0"))
    np.testing.assert_allclose(out.mean(axis=0), [0, 0], atol=1e-5)
    np.testing.assert_allclose(mean, 0.01 * data.mean(axis=0), rtol=1e-5)


def test_losses_against_numpy():
    graph = tf.Graph()
    with graph.as_default():
        logits = tf.constant([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]])
        labels = tf.constant([0, 1])
        xent = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        mse = tf.losses.mean_squared_error(tf.constant([1.0, 2.0]), tf.constant([1.5, 2.0]),
                                           weights=tf.constant([1.0, 0.0]))
        assert len(tf.losses.get_losses()) == 2
        total = tf.losses.get_total_loss()
        v_xent, v_mse, v_total = _run(graph, [xent, mse, total])
    lv = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]])
    p = np.exp(lv) / np.exp(lv).sum(axis=1, keepdims=True)
    assert v_xent == pytest.approx(-np.mean(np.log([p[0, 0], p[1, 1]])), rel=1e-5)
    assert v_mse == pytest.approx(0.25)  # sum by nonzero weights: one weight
    assert v_total == pytest.approx(v_xent + v_mse, rel=1e-5)
    with pytest.raises(ValueError, match="Reduction"):
        tf.losses.mean_squared_error(1.0, 2.0, reduction="bogus")


def test_log_loss_and_cosine_distance_against_numpy():
    graph = tf.Graph()
    with graph.as_default():
        y = np.array([[1.0], [0.0], [1.0]])
        p = np.array([[0.9], [0.2], [0.0]])
        ll = tf.losses.log_loss(tf.constant(y), tf.constant(p), weights=tf.constant([[1.0], [2.0], [0.0]]))
        a = np.array([[1.0, 0.0], [0.0, 1.0]])
        b = np.array([[0.6, 0.8], [0.6, 0.8]])
        cd = tf.losses.cosine_distance(tf.constant(a), tf.constant(b), axis=1)
        cd_dim = tf.losses.cosine_distance(tf.constant(a), tf.constant(b), dim=1,
                                           reduction=tf.losses.Reduction.NONE)
        assert len(tf.losses.get_losses()) == 3
        v_ll, v_cd, v_dim = _run(graph, [ll, cd, cd_dim])
    per = -y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7)
    assert v_ll == pytest.approx((per[0, 0] + 2 * per[1, 0]) / 2)  # nonzero weights: two
    assert v_cd == pytest.approx(0.3)
    np.testing.assert_allclose(v_dim, [[0.4], [0.2]])
    with pytest.raises(ValueError, match="axis"):
        tf.losses.cosine_distance(a, b)


def test_metric_update_op_is_a_tensor():
    graph = tf.Graph()
    with graph.as_default():
        labels = tf.placeholder(tf.int64, [None])
        predictions = tf.placeholder(tf.int64, [None])
        acc, acc_op = tf.metrics.accuracy(labels=labels, predictions=predictions)
        summary = tf.summary.scalar("accuracy", acc_op)  # TF1's idiom
        assert isinstance(acc_op, tf.Tensor)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.local_variables_initializer())
            first = sess.run(acc_op, {labels: [1, 2, 3, 4], predictions: [1, 2, 0, 0]})
            second = sess.run(acc_op, {labels: [1, 1], predictions: [1, 1]})
            final = sess.run(acc)
            assert sess.run(summary, {labels: [1], predictions: [1]})
    assert first == pytest.approx(0.5)
    assert second == pytest.approx(4 / 6)
    assert final == pytest.approx(4 / 6)


def test_mean_and_auc():
    graph = tf.Graph()
    with graph.as_default():
        m, m_op = tf.metrics.mean(tf.constant([1.0, 2.0, 6.0]))
        auc, auc_op = tf.metrics.auc(tf.constant([0, 0, 1, 1]),
                                     tf.constant([0.1, 0.4, 0.35, 0.8]))
        with tf.Session(graph=graph) as sess:
            sess.run(tf.local_variables_initializer())
            sess.run([m_op, auc_op])
            mv, av = sess.run([m, auc])
    assert mv == pytest.approx(3.0)
    assert av == pytest.approx(0.75, abs=0.02)


def test_feature_columns_input_layer():
    graph = tf.Graph()
    with graph.as_default():
        age = tf.feature_column.numeric_column("age")
        color = tf.feature_column.categorical_column_with_vocabulary_list(
            "color", ["red", "green", "blue"])
        buckets = tf.feature_column.bucketized_column(age, [18, 65])
        features = {"age": tf.constant([[10.0], [40.0]]),
                    "color": tf.constant([["blue"], ["red"]])}
        dense = tf.feature_column.input_layer(
            features, [age, tf.feature_column.indicator_column(color), buckets])
        value = _run(graph, dense)
    # Columns in TF's order, by name: age, age_bucketized (<18, 18..65, >=65),
    # color_indicator (red, green, blue).
    np.testing.assert_array_equal(value, [[10, 1, 0, 0, 0, 0, 1],
                                          [40, 0, 1, 0, 1, 0, 0]])
    assert color.name == "color" and buckets.name == "age_bucketized"
