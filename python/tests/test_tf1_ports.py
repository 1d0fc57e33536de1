"""Well-known TF 1.x programs ported by changing the import only (session 16's campaign):
the tf.layers CNN MNIST tutorial (cnn_mnist.py) on tf.estimator, a custom Estimator with
tf.metrics and a SessionRunHook of its own, and a tf.data pipeline (map, shuffle, batch,
repeat) behind an initializable iterator fed from placeholders. Every number is checked
against numpy: the CNN's predictions against a float64 forward pass of its checkpointed
weights, evaluate()'s loss and accuracy as TF 1.15 defines them, the metrics from their
definitions, and the pipeline's elements, batches and epochs. Sizes are small (CI has 2
cores)."""
import gzip
import os
import struct

import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")

FASHION = "/usr/share/datasets/fashion-mnist/"


def _images(n, offset=0):
    """n Fashion-MNIST training images (float32 in [0, 1], [n, 784]) and labels (int32)."""
    if not os.path.exists(FASHION + "train-images-idx3-ubyte.gz"):
        pytest.skip("Fashion-MNIST is not installed in " + FASHION)
    with gzip.open(FASHION + "train-images-idx3-ubyte.gz") as f:
        _, _, rows, cols = struct.unpack(">IIII", f.read(16))
        f.read(offset * rows * cols)
        x = np.frombuffer(f.read(n * rows * cols), np.uint8).reshape(n, -1) / np.float32(255)
    with gzip.open(FASHION + "train-labels-idx1-ubyte.gz") as f:
        f.read(8 + offset)
        labels = np.frombuffer(f.read(n), np.uint8)
    return x.astype(np.float32), labels.astype(np.int32)


# --- cnn_mnist.py (TF 1.x "Build a Convolutional Neural Network using Estimators") -------
# The model function as the tutorial prints it.
def cnn_model_fn(features, labels, mode):
    """Model function for CNN."""
    input_layer = tf.reshape(features["x"], [-1, 28, 28, 1])
    conv1 = tf.layers.conv2d(inputs=input_layer, filters=32, kernel_size=[5, 5],
                             padding="same", activation=tf.nn.relu)
    pool1 = tf.layers.max_pooling2d(inputs=conv1, pool_size=[2, 2], strides=2)
    conv2 = tf.layers.conv2d(inputs=pool1, filters=64, kernel_size=[5, 5], padding="same",
                             activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(inputs=conv2, pool_size=[2, 2], strides=2)
    pool2_flat = tf.reshape(pool2, [-1, 7 * 7 * 64])
    dense = tf.layers.dense(inputs=pool2_flat, units=1024, activation=tf.nn.relu)
    dropout = tf.layers.dropout(inputs=dense, rate=0.4,
                                training=mode == tf.estimator.ModeKeys.TRAIN)
    logits = tf.layers.dense(inputs=dropout, units=10)
    predictions = {
        "classes": tf.argmax(input=logits, axis=1),
        "probabilities": tf.nn.softmax(logits, name="softmax_tensor"),
    }
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode=mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.001)
        train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)
    eval_metric_ops = {
        "accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions["classes"])}
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops=eval_metric_ops)


def _conv_same_relu(x, kernel, bias):
    """NHWC x, HWIO kernel, stride 1, SAME, then bias and ReLU, in float64."""
    n, h, w, c = x.shape
    kh, kw, _, o = kernel.shape
    pad = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    cols = np.empty((n, h, w, kh, kw, c))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i, j, :] = pad[:, i:i + h, j:j + w, :]
    y = cols.reshape(n * h * w, -1) @ kernel.reshape(-1, o) + bias
    return np.maximum(y, 0).reshape(n, h, w, o)


def _max_pool_2x2(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def _cnn_forward(v, x):
    """The tutorial's network in float64 from the checkpoint's variables `v`."""
    h = _max_pool_2x2(_conv_same_relu(x.reshape(-1, 28, 28, 1).astype(np.float64),
                                      v["conv2d/kernel"], v["conv2d/bias"]))
    h = _max_pool_2x2(_conv_same_relu(h, v["conv2d_1/kernel"], v["conv2d_1/bias"]))
    h = np.maximum(h.reshape(len(x), -1) @ v["dense/kernel"] + v["dense/bias"], 0)
    logits = h @ v["dense_1/kernel"] + v["dense_1/bias"]
    p = np.exp(logits - logits.max(1, keepdims=True))
    return logits, p / p.sum(1, keepdims=True)


def test_cnn_mnist_tutorial_matches_a_float64_numpy_forward_pass(tmp_path, capsys):
    train_data, train_labels = _images(400)
    eval_data, eval_labels = _images(200, offset=1000)
    mnist_classifier = tf.estimator.Estimator(model_fn=cnn_model_fn, model_dir=str(tmp_path))
    tensors_to_log = {"probabilities": "softmax_tensor"}
    logging_hook = tf.train.LoggingTensorHook(tensors=tensors_to_log, every_n_iter=5)
    train_input_fn = tf.estimator.inputs.numpy_input_fn(
        x={"x": train_data}, y=train_labels, batch_size=100, num_epochs=None, shuffle=True)
    mnist_classifier.train(input_fn=train_input_fn, steps=6, hooks=[logging_hook])
    eval_input_fn = tf.estimator.inputs.numpy_input_fn(
        x={"x": eval_data}, y=eval_labels, num_epochs=1, shuffle=False)
    eval_results = mnist_classifier.evaluate(input_fn=eval_input_fn)

    names = set(mnist_classifier.get_variable_names())
    # tf.layers' names, as TF 1.15 makes them (a checkpoint of TF's reads the same way).
    for layer in ("conv2d", "conv2d_1", "dense", "dense_1"):
        assert layer + "/kernel" in names and layer + "/bias" in names, sorted(names)
    v = {n: mnist_classifier.get_variable_value(n) for n in names}
    assert v["conv2d/kernel"].shape == (5, 5, 1, 32)
    assert v["conv2d_1/kernel"].shape == (5, 5, 32, 64)
    assert v["dense/kernel"].shape == (7 * 7 * 64, 1024)
    assert eval_results["global_step"] == 6
    # The weights moved from their initial values (training ran on real gradients).
    assert np.abs(v["dense_1/bias"]).max() > 0

    logits, probs = _cnn_forward(v, eval_data)
    predictions = list(mnist_classifier.predict(input_fn=tf.estimator.inputs.numpy_input_fn(
        x={"x": eval_data}, num_epochs=1, shuffle=False)))
    assert len(predictions) == len(eval_data)
    got = np.stack([p["probabilities"] for p in predictions])
    np.testing.assert_allclose(got, probs, rtol=1e-4, atol=1e-6)
    classes = np.array([p["classes"] for p in predictions])
    # argmax ties aside (none at float32 resolution here), the classes are numpy's.
    assert (classes == probs.argmax(1)).mean() >= 0.995

    # evaluate(): accuracy over all 200 examples; the loss is TF 1.15's tf.metrics.mean of
    # each batch's mean loss (numpy_input_fn's default batch 128: batches of 128 and 72),
    # not the mean over examples.
    ce = -np.log(probs[np.arange(len(eval_labels)), eval_labels])
    want_loss = (ce[:128].mean() + ce[128:].mean()) / 2
    assert eval_results["loss"] == pytest.approx(want_loss, rel=1e-4)
    assert eval_results["accuracy"] == pytest.approx(
        np.mean(probs.argmax(1) == eval_labels), abs=1e-6)


# --- a custom Estimator with tf.metrics and a SessionRunHook -----------------------------
def _linear_model_fn(features, labels, mode, params):
    x = features["x"]
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    logits = tf.squeeze(tf.matmul(x, w) + b, axis=1)
    prob = tf.sigmoid(logits)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"prob": prob})
    loss = tf.losses.sigmoid_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        train_op = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    predicted = tf.cast(prob > 0.5, tf.float32)
    metrics = {
        "accuracy": tf.metrics.accuracy(labels, predicted),
        "precision": tf.metrics.precision(labels, predicted),
        "recall": tf.metrics.recall(labels, predicted),
        "mse": tf.metrics.mean_squared_error(labels, prob),
        "mean_prob": tf.metrics.mean(prob),
        "auc": tf.metrics.auc(labels, prob),
    }
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)


class _RecordingHook(tf.train.SessionRunHook):
    """Records the hook calls and the loss and weights of every step; stops at `stop_at`."""

    def __init__(self, stop_at):
        self.stop_at = stop_at
        self.calls = []
        self.steps = []

    def begin(self):
        self.calls.append("begin")
        self._step = tf.train.get_global_step()
        graph = tf.get_default_graph()
        self._w = graph.get_tensor_by_name("w:0")
        self._loss = tf.get_collection(tf.GraphKeys.LOSSES)[0]

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs({"step": self._step, "loss": self._loss})

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.steps.append(run_values.results)
        if len(self.steps) == self.stop_at:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")
        self.final_w = session.run(self._w)


def _metric_reference(y, prob):
    predicted = (prob > 0.5).astype(np.float64)
    tp = np.sum((predicted == 1) & (y == 1))
    fp = np.sum((predicted == 1) & (y == 0))
    fn = np.sum((predicted == 0) & (y == 1))
    # tf.metrics.auc: 200 thresholds, i/199 for i in 1..198 and -eps, 1 + eps at the ends;
    # a prediction counts as positive when it is above a threshold; trapezoids over
    # (fpr, tpr) (TF 1.15's _auc, summation_method='trapezoidal').
    eps = 1e-7
    thresholds = np.array([-eps] + [(i + 1) * 1.0 / 199 for i in range(198)] + [1 + eps])
    above = prob[None, :] > thresholds[:, None]
    tps = np.sum(above & (y[None, :] == 1), axis=1).astype(np.float64)
    fps = np.sum(above & (y[None, :] == 0), axis=1).astype(np.float64)
    fns = np.sum(~above & (y[None, :] == 1), axis=1).astype(np.float64)
    tns = np.sum(~above & (y[None, :] == 0), axis=1).astype(np.float64)
    tpr = (tps + eps) / (tps + fns + eps)
    fpr = fps / (fps + tns + eps)
    auc = np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)
    return {"accuracy": np.mean(predicted == y), "precision": tp / (tp + fp),
            "recall": tp / (tp + fn), "mse": np.mean((prob - y) ** 2),
            "mean_prob": np.mean(prob), "auc": auc}


def test_custom_estimator_metrics_and_hook_match_numpy(tmp_path):
    rng = np.random.RandomState(3)
    x = rng.randn(240, 3).astype(np.float32)
    y = (x @ np.array([1.5, -2.0, 0.5]) + 0.3 * rng.randn(240) > 0).astype(np.float32)
    est = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path), params={"lr": 0.5})
    hook = _RecordingHook(stop_at=7)
    # batches of 40 in order, forever: the hook stops training after its 7th step
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=40, num_epochs=None,
                                                 shuffle=False), steps=100, hooks=[hook])
    assert hook.calls[:2] == ["begin", "after_create_session"]
    assert hook.calls[2:-1] == ["before_run", "after_run"] * 7
    assert hook.calls[-1] == "end"
    assert est.get_variable_value("global_step") == 7
    # The same SGD in float64 numpy: each step's loss (fetched with the train op: the
    # weights before that step's update) and the final weights.
    w, b = np.zeros(3), 0.0
    for step in range(7):
        bx, by = x[step * 40 % 240:][:40].astype(np.float64), y[step * 40 % 240:][:40]
        z = bx @ w + b
        p = 1 / (1 + np.exp(-z))
        loss = np.mean(np.maximum(z, 0) - z * by + np.log1p(np.exp(-np.abs(z))))
        assert hook.steps[step]["loss"] == pytest.approx(loss, rel=1e-5), step
        g = (p - by) / len(by)
        w, b = w - 0.5 * bx.T @ g, b - 0.5 * g.sum()
    np.testing.assert_allclose(hook.final_w[:, 0], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(est.get_variable_value("w")[:, 0], w, rtol=1e-5, atol=1e-6)

    # evaluate(): every metric over all 240 examples (batches of 64: 64, 64, 64, 48).
    results = est.evaluate(tf.estimator.inputs.numpy_input_fn(
        {"x": x}, y, batch_size=64, num_epochs=1, shuffle=False))
    prob = 1 / (1 + np.exp(-(x.astype(np.float64) @ w + b)))
    want = _metric_reference(y, prob)
    for key, value in want.items():
        assert results[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    assert results["global_step"] == 7
    got = np.array([p["prob"] for p in est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": x}, batch_size=64, num_epochs=1, shuffle=False))])
    np.testing.assert_allclose(got, prob, rtol=1e-5, atol=1e-6)


# --- tf.data: map, shuffle, batch, repeat behind an initializable iterator ---------------
def test_initializable_iterator_fed_from_placeholders_matches_numpy():
    features_placeholder = tf.placeholder(tf.float32, [None, 3])
    labels_placeholder = tf.placeholder(tf.int64, [None])
    dataset = tf.data.Dataset.from_tensor_slices((features_placeholder, labels_placeholder))
    dataset = dataset.map(lambda x, y: ({"x": x * 2.0, "norm": tf.reduce_sum(x * x)}, y + 1))
    dataset = dataset.shuffle(buffer_size=1000).batch(32).repeat(2)
    iterator = dataset.make_initializable_iterator()
    next_element = iterator.get_next()
    assert next_element[0]["x"].dtype == tf.float32
    assert next_element[1].dtype == tf.int64
    assert next_element[0]["x"].shape.as_list() == [None, 3]

    rng = np.random.RandomState(5)
    with tf.Session() as sess:
        for n in (75, 40):  # re-initialized with other arrays, of another length
            features = rng.randn(n, 3).astype(np.float32)
            labels = rng.randint(0, 1000, n).astype(np.int64)
            sess.run(iterator.initializer,
                     feed_dict={features_placeholder: features, labels_placeholder: labels})
            batches = []
            while True:
                try:
                    batches.append(sess.run(next_element))
                except tf.errors.OutOfRangeError:
                    break
            # shuffle -> batch -> repeat: each pass's last batch is short.
            sizes = [len(b[1]) for b in batches]
            per_pass = [32] * (n // 32) + ([n % 32] if n % 32 else [])
            assert sizes == per_pass * 2, sizes
            for p in range(2):
                part = batches[p * len(per_pass):(p + 1) * len(per_pass)]
                xs = np.concatenate([b[0]["x"] for b in part])
                norms = np.concatenate([b[0]["norm"] for b in part])
                ys = np.concatenate([b[1] for b in part])
                # Each pass is a permutation of the mapped rows, features with their labels.
                order = np.argsort(ys * 10000 + np.round(xs[:, 0] * 100))
                ref_order = np.argsort((labels + 1) * 10000 + np.round(features[:, 0] * 200))
                np.testing.assert_array_equal(ys[order], labels[ref_order] + 1)
                np.testing.assert_allclose(xs[order], features[ref_order] * 2, rtol=1e-6)
                np.testing.assert_allclose(norms[order], (features[ref_order] ** 2).sum(1),
                                           rtol=1e-5)
            # Two passes of a reshuffled pipeline: another order (75 or 40 rows).
            first = np.concatenate([b[1] for b in batches[:len(per_pass)]])
            second = np.concatenate([b[1] for b in batches[len(per_pass):]])
            assert not np.array_equal(first, second)
            # Past the end: OutOfRangeError again, not a hang or a silent empty batch.
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(next_element)
        # Unfed placeholders at initialization: an error naming the placeholder.
        with pytest.raises(tf.errors.InvalidArgumentError, match="Placeholder"):
            sess.run(iterator.initializer, feed_dict={features_placeholder: features})


# tf.data.experimental.unbatch() (TF 1.15's form before Dataset.unbatch) was a bare
# AttributeError ("type object 'experimental' has no attribute 'unbatch'").
def test_experimental_unbatch_for_apply():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).apply(
        tf.data.experimental.unbatch())
    next_element = dataset.make_one_shot_iterator().get_next()
    got = []
    with tf.Session() as sess:
        try:
            while True:
                got.append(sess.run(next_element))
        except tf.errors.OutOfRangeError:
            pass
    assert got == list(range(6))


# --- a custom training loop: a TF-written checkpoint restored by tf.train.Saver, Momentum
# with exponential_decay (staircase), clip_by_global_norm, ExponentialMovingAverage with
# num_updates, and the EMA's variables_to_restore -----------------------------------------
def _tf_ckpt():
    root = os.environ.get("LOOM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    return os.path.join(root, "testdata", "tf", "tfx_estimator_ckpt", "model.ckpt-999")


def test_custom_loop_with_a_tf_checkpoint_clipping_decay_and_ema_matches_numpy(tmp_path):
    rng = np.random.default_rng(1)
    xs = rng.normal(0, 1, (12, 8, 3)).astype(np.float32)
    ys = rng.integers(0, 3, (12, 8)).astype(np.int32)
    w2_init = rng.normal(0, 0.1, (100, 3)).astype(np.float32)

    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.int32, [None])
    with tf.variable_scope("dnn/hiddenlayer_0"):  # TF's DNN first layer: 3 -> 100
        w1 = tf.get_variable("kernel", [3, 100])
        b1 = tf.get_variable("bias", [100])
    w2 = tf.get_variable("out/kernel", initializer=w2_init)
    b2 = tf.get_variable("out/bias", initializer=np.zeros(3, np.float32))
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.5, step, decay_steps=4, decay_rate=0.5, staircase=True)
    opt = tf.train.MomentumOptimizer(lr, 0.9)
    grads, tvars = zip(*opt.compute_gradients(loss))
    clipped, global_norm = tf.clip_by_global_norm(grads, 1.0)
    opt_op = opt.apply_gradients(zip(clipped, tvars), global_step=step)
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    with tf.control_dependencies([opt_op]):  # TF's documented pattern
        train_op = ema.apply(tf.trainable_variables())
    pretrained = tf.train.Saver({"dnn/hiddenlayer_0/kernel": w1, "dnn/hiddenlayer_0/bias": b1})
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w2_shadow_init = sess.run(ema.average(w2))
        pretrained.restore(sess, _tf_ckpt())  # TF's own bundle: it was NotFound
        start = [v.astype(np.float64) for v in sess.run([w1, b1])]
        lrs, norms = [], []
        for i in range(12):
            _, r, n = sess.run([train_op, lr, global_norm], {x: xs[i], y: ys[i]})
            lrs.append(r)
            norms.append(n)
        got = sess.run([w1, b1, w2, b2, ema.average(w2), ema.average(b2),
                        opt.get_slot(w2, "momentum"), step])
        path = saver.save(sess, str(tmp_path / "model"), global_step=step)
    assert float(start[0].sum()) == pytest.approx(1.2036554210353643, rel=1e-6)

    params = start + [w2_init.astype(np.float64), np.zeros(3)]
    accum = [np.zeros_like(p) for p in params]
    shadow = [w2_shadow_init.astype(np.float64), np.zeros(3)]  # the initial values, as TF
    want_lrs, want_norms = [], []
    for i in range(12):
        xb = xs[i].astype(np.float64)
        pre = xb @ params[0] + params[1]
        h = np.maximum(pre, 0)
        z = h @ params[2] + params[3]
        p = np.exp(z - z.max(1, keepdims=True))
        d = p / p.sum(1, keepdims=True)
        d[np.arange(8), ys[i]] -= 1
        d /= 8
        dh = (d @ params[2].T) * (pre > 0)
        g = [xb.T @ dh, dh.sum(0), h.T @ d, d.sum(0)]
        norm = np.sqrt(sum((v * v).sum() for v in g))
        want_norms.append(norm)
        g = [v / max(norm, 1.0) for v in g]
        rate = 0.5 * 0.5 ** (i // 4)  # the step before this update's increment
        want_lrs.append(rate)
        accum = [0.9 * a + v for a, v in zip(accum, g)]
        params = [p - rate * a for p, a in zip(params, accum)]
        decay = min(0.9, (2.0 + i) / (11.0 + i))  # num_updates after the increment
        shadow = [s - (s - v) * (1 - decay) for s, v in zip(shadow, params[2:])]
    np.testing.assert_allclose(lrs, want_lrs, rtol=1e-6)
    np.testing.assert_allclose(norms, want_norms, rtol=1e-5)
    for g, w in zip(got[:4] + got[4:6] + [got[6]], params + shadow + [accum[2]]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert got[7] == 12

    # Evaluation with the averages: variables_to_restore maps each shadow onto its variable.
    tf.reset_default_graph()
    w2_eval = tf.get_variable("out/kernel", [100, 3])
    b2_eval = tf.get_variable("out/bias", [3])
    with tf.variable_scope("dnn/hiddenlayer_0"):
        tf.get_variable("kernel", [3, 100])
        tf.get_variable("bias", [100])
    with tf.Session() as sess:
        tf.train.Saver(tf.train.ExponentialMovingAverage(0.9).variables_to_restore()).restore(
            sess, path)
        np.testing.assert_array_equal(sess.run(w2_eval), got[4])
        np.testing.assert_array_equal(sess.run(b2_eval), got[5])


def test_saver_restore_of_a_tf_checkpoint_names_a_missing_tensor():
    v = tf.get_variable("dnn/hiddenlayer_9/kernel", [3, 100])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="dnn/hiddenlayer_9/kernel"):
            tf.train.Saver([v]).restore(sess, _tf_ckpt())


# --- a dynamic_rnn text classifier: embedding_lookup, GRUCell, sequence_length ------------
def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_dynamic_rnn_text_classifier_matches_numpy_and_ignores_padding():
    rng = np.random.default_rng(5)
    vocab, dim, units, pad = 11, 4, 5, 0
    ids = np.array([[3, 7, 2, 9, 1], [4, 4, 8, pad, pad], [10, pad, pad, pad, pad]], np.int32)
    lengths = np.array([5, 3, 1], np.int32)
    labels = np.array([1, 0, 2], np.int32)
    ids_ph = tf.placeholder(tf.int32, [None, 5])
    len_ph = tf.placeholder(tf.int32, [None])
    embeddings = tf.get_variable("embeddings", [vocab, dim], dtype=tf.float64)
    cell = tf.nn.rnn_cell.GRUCell(units, dtype=tf.float64)
    outputs, state = tf.nn.dynamic_rnn(cell, tf.nn.embedding_lookup(embeddings, ids_ph),
                                       sequence_length=len_ph, dtype=tf.float64)
    logits = tf.layers.dense(state, 3)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    (d_embeddings,) = tf.gradients(loss, [embeddings])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {ids_ph: ids, len_ph: lengths}
        out, h, d_emb = sess.run([outputs, state, tf.convert_to_tensor(d_embeddings)], feed)
        emb, wg, bg, wc, bc = sess.run([embeddings] + list(cell._variables))
        # The padding id's row gets no gradient: its steps are past every length.
        assert not d_emb[pad].any()
        # The table's gradient (it used to fail: the zero state's batch size reached
        # FillDynamic through Shape) against central differences.
        table = sess.run(embeddings)
        numeric = np.zeros_like(table)
        for i in np.ndindex(*table.shape):
            moved = table.copy()
            moved[i] += 1e-6
            embeddings.load(moved, sess)
            up = sess.run(loss, feed)
            moved[i] -= 2e-6
            embeddings.load(moved, sess)
            numeric[i] = (up - sess.run(loss, feed)) / 2e-6
        embeddings.load(table, sess)
        np.testing.assert_allclose(d_emb, numeric, rtol=1e-5, atol=1e-8)
        # A changed padding id changes nothing.
        other = sess.run([outputs, state], {ids_ph: np.where(ids == pad, 6, ids), len_ph: lengths})
        np.testing.assert_array_equal(other[0], out)
        np.testing.assert_array_equal(other[1], h)
    # TF's GRUCell in numpy, rows frozen past their length, outputs zero there.
    want_h = np.zeros((3, units))
    want_out = np.zeros((3, 5, units))
    for t in range(5):
        x = emb[ids[:, t]]
        r, u = np.split(_np_sigmoid(np.concatenate([x, want_h], 1) @ wg + bg), 2, axis=1)
        c = np.tanh(np.concatenate([x, r * want_h], 1) @ wc + bc)
        new_h = u * want_h + (1 - u) * c
        alive = (t < lengths)[:, None]
        want_h = np.where(alive, new_h, want_h)
        want_out[:, t] = np.where(alive, new_h, 0)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, want_h, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rnn", ["dynamic_rnn", "static_rnn"])
def test_rnn_padding_that_is_not_a_number_stays_out_as_tf(rnn):
    # Past a row's length TF selects (where) the carried state and zero outputs, so NaN or
    # Inf padding (a missing-value marker) never reaches them; Loom blended with a 0 / 1
    # mask, and 0 * NaN made the row's state and outputs NaN.
    rng = np.random.default_rng(0)
    x_clean = rng.normal(0, 1, (3, 5, 4)).astype(np.float32)
    lengths = np.array([5, 2, 0], np.int32)
    x_padded = x_clean.copy()
    for row, n in enumerate(lengths):
        x_padded[row, n:] = np.nan if row != 1 else np.inf
    x = tf.placeholder(tf.float32, [3, 5, 4])
    cell = tf.nn.rnn_cell.BasicLSTMCell(6)
    if rnn == "dynamic_rnn":
        outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    else:
        outputs, state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), sequence_length=lengths,
                                          dtype=tf.float32)
        outputs = tf.stack(outputs, 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        clean = sess.run([outputs, state.c, state.h], {x: x_clean * (np.arange(5) < lengths[:, None])[..., None]})
        padded = sess.run([outputs, state.c, state.h], {x: x_padded})
    for want, got in zip(clean, padded):
        np.testing.assert_array_equal(got, want)


def test_get_variable_from_a_value_takes_its_dtype_as_tf():
    # TF 1.15 creates a variable initialized from a value with the value's dtype
    # (variable_dtype = None); Loom cast it to float32 silently (a float64 table lost its
    # precision, int64 counts became floats). An explicit dtype still decides.
    table = np.array([1.0 + 1e-12, 2.0])
    cases = {"float64 array": (table, tf.float64), "int64 array": (np.array([3, 4]), tf.int64),
             "float64 tensor": (tf.constant([1.0], tf.float64), tf.float64),
             "float32 array": (np.ones(2, np.float32), tf.float32),
             "Python floats": ([1.0, 2.0], tf.float32), "Python ints": ([1, 2], tf.int32)}
    made = {name: tf.get_variable("v%d" % i, initializer=value)
            for i, (name, (value, _)) in enumerate(cases.items())}
    explicit = tf.get_variable("explicit", initializer=table, dtype=tf.float32)
    for name, (_, dtype) in cases.items():
        assert made[name].dtype == dtype, name
    assert explicit.dtype == tf.float32
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(made["float64 array"])[0] == table[0]  # not rounded to float32


def test_layers_flatten_of_dims_known_only_when_it_runs():
    # TF's Flatten reshapes to [shape(x)[0], -1]; Loom's needed every non-batch dim known.
    x = np.random.default_rng(0).normal(0, 1, (2, 3, 4))
    ph = tf.placeholder(tf.float64, [None, None, 4])
    flat = tf.layers.flatten(ph)
    (grad,) = tf.gradients(tf.reduce_sum(flat * flat), [ph])
    with tf.Session() as sess:
        got, d = sess.run([flat, grad], {ph: x})
    np.testing.assert_array_equal(got, x.reshape(2, 12))
    np.testing.assert_allclose(d, 2 * x)
