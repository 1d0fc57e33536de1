"""tf.estimator's exporters in EvalSpec(exporters=...) (LatestExporter, BestExporter,
FinalExporter, an Exporter subclass), serving input receivers (raw and parsing, with
tf.parse_example), tf.contrib.predictor.from_saved_model, CheckpointSaverListener in
Estimator.train(saving_listeners=...), and the DNNLinearCombined estimators."""
import os
import struct

import numpy as np
import pytest

import loom.compat.v1 as tf


def _data(n=128, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    y = (3.0 * x[:, :1] - 2.0 * x[:, 1:] + 0.5).astype(np.float32)
    return x, y


def linear_model_fn(features, labels, mode):
    predictions = tf.layers.dense(features["x"], 1, name="linear")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions})
    loss = tf.losses.mean_squared_error(labels, predictions)
    train_op = tf.train.GradientDescentOptimizer(0.2).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_fn():
    inp = tf.placeholder(tf.float32, [None, 2], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": inp}, {"x": inp})


def _exports(model_dir, name):
    base = os.path.join(model_dir, "export", name)
    return sorted(os.listdir(base)) if os.path.isdir(base) else []


class RecordingExporter(tf.estimator.Exporter):
    """A user's Exporter subclass: records each call and exports every other one."""

    def __init__(self):
        self.calls = []
        self.losses = []

    @property
    def name(self):
        return "custom"

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        self.calls.append((int(eval_result["global_step"]), is_the_final_export))
        self.losses.append(float(eval_result["loss"]))
        assert isinstance(eval_result["loss"], np.float32)
        return estimator.export_saved_model(export_path, serving_input_fn,
                                            checkpoint_path=checkpoint_path)


def test_exporters_in_train_and_evaluate(tmp_path):
    x, y = _data()
    model_dir = str(tmp_path / "model")
    est = tf.estimator.Estimator(linear_model_fn, model_dir=model_dir,
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=10))
    compared = []

    def loss_smaller(best_eval_result, current_eval_result):
        compared.append((int(best_eval_result["global_step"]),
                         int(current_eval_result["global_step"])))
        return best_eval_result["loss"] > current_eval_result["loss"]

    custom = RecordingExporter()
    exporters = [tf.estimator.LatestExporter("latest", serving_input_fn, exports_to_keep=2),
                 tf.estimator.BestExporter("best", serving_input_fn, compare_fn=loss_smaller),
                 tf.estimator.FinalExporter("final", serving_input_fn), custom,
                 tf.estimator.BestExporter("best_default", serving_input_fn)]
    train_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None,
                                                  shuffle=True)
    eval_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=64, shuffle=False)
    metrics, export_results = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_fn, max_steps=30),
        tf.estimator.EvalSpec(eval_fn, steps=None, exporters=exporters, start_delay_secs=0,
                              throttle_secs=0.001))
    assert metrics["global_step"] == 30
    # Evaluations at the checkpoints of steps 10, 20 and 30 (the final one).
    assert custom.calls == [(10, False), (20, False), (30, True)]
    assert len(_exports(model_dir, "latest")) == 2  # 3 written, the newest 2 kept
    assert len(_exports(model_dir, "final")) == 1
    assert len(_exports(model_dir, "custom")) == 3
    # The first evaluation is the best so far without a comparison, as in TF.
    assert compared == [(10, 20), (20, 30)] or compared == [(10, 20), (10, 30)]
    best = _exports(model_dir, "best")
    assert 1 <= len(best) <= 3
    # Every export written is listed, the one LatestExporter removed since included.
    best_default = _exports(model_dir, "best_default")
    assert len(export_results) == 3 + len(best) + 1 + 3 + len(best_default)
    # TF's default compare_fn (_loss_smaller): the best kept is the smallest loss.
    assert exporters[-1]._native.best["loss"] == pytest.approx(min(custom.losses))
    assert len(best_default) == 1 + sum(b < a for a, b in zip(
        np.minimum.accumulate(custom.losses), custom.losses[1:]))
    assert all(p.startswith(os.path.join(model_dir, "export")) for p in export_results)
    gone = [p for p in export_results if not os.path.isdir(p)]
    assert len(gone) == 1 and os.path.dirname(gone[0]).endswith("latest")

    # The final export serves the final checkpoint's model.
    final_dir = os.path.join(model_dir, "export", "final", _exports(model_dir, "final")[0])
    predictor = tf.contrib.predictor.from_saved_model(final_dir)
    assert predictor.global_step == 30
    assert predictor.input_keys == ["x"]
    served = predictor({"x": x[:4]})
    expected = np.stack([p["y"] for p in est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": x[:4]}, shuffle=False))])
    np.testing.assert_allclose(served["y"], expected, rtol=1e-6)
    kernel = est.get_variable_value("linear/kernel")
    bias = est.get_variable_value("linear/bias")
    np.testing.assert_allclose(served["y"], x[:4] @ kernel + bias, rtol=1e-5)


def test_exporter_argument_checks():
    with pytest.raises(ValueError, match="unique names"):
        tf.estimator.EvalSpec(lambda: None, exporters=[
            tf.estimator.FinalExporter("a", serving_input_fn),
            tf.estimator.LatestExporter("a", serving_input_fn)])
    with pytest.raises(TypeError, match="Exporter"):
        tf.estimator.EvalSpec(lambda: None, exporters=["not an exporter"])
    with pytest.raises(ValueError, match="positive"):
        tf.estimator.LatestExporter("a", serving_input_fn, exports_to_keep=0)
    with pytest.raises(ValueError, match="best_eval_result"):
        tf.estimator.BestExporter("b", serving_input_fn, compare_fn=lambda a, b: True)
    spec = tf.estimator.EvalSpec(lambda: None,
                                 exporters=tf.estimator.FinalExporter("f", serving_input_fn))
    assert len(spec.exporters) == 1


def _varint(n):
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


def _example(floats):
    """A serialized tf.Example {"x": float_list(floats)} (protobuf wire format)."""
    float_list = _field(1, struct.pack("<%df" % len(floats), *floats))  # packed values
    feature = _field(2, float_list)  # Feature.float_list
    entry = _field(1, b"x") + _field(2, feature)  # map entry key, value
    return _field(1, _field(1, entry))  # Example.features -> Features.feature


def test_parse_example_and_parsing_serving_input_receiver(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        serialized = tf.placeholder(tf.string, [None])
        parsed = tf.parse_example(serialized, {
            "x": tf.FixedLenFeature([2], tf.float32),
            "missing": tf.FixedLenFeature([1], tf.float32, default_value=-1.0)})
        assert parsed["x"].shape.as_list() == [None, 2]
        with tf.Session() as sess:
            values = sess.run(parsed, {serialized: np.array(
                [_example([1.0, 2.0]), _example([3.0, -4.0])], dtype=object)})
        with pytest.raises(NotImplementedError, match="FixedLenFeature and tf.VarLenFeature"):
            tf.io.parse_example(serialized, {"v": ("not", "a feature")})
    np.testing.assert_array_equal(values["x"], [[1, 2], [3, -4]])
    np.testing.assert_array_equal(values["missing"], [[-1], [-1]])

    x, y = _data(64)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "model"))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None,
                                                 shuffle=True), steps=20)
    receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        {"x": tf.FixedLenFeature([2], tf.float32)})
    path = est.export_saved_model(str(tmp_path / "export"), receiver_fn)
    predictor = tf.contrib.predictor.from_saved_model(path)
    assert predictor.input_keys == ["examples"]
    out = predictor({"examples": np.array([_example([0.5, -0.5]), _example([0.0, 1.0])],
                                          dtype=object)})
    kernel = est.get_variable_value("linear/kernel")
    bias = est.get_variable_value("linear/bias")
    np.testing.assert_allclose(out["y"], np.array([[0.5, -0.5], [0.0, 1.0]]) @ kernel + bias,
                               rtol=1e-5)


class RecordingListener(tf.train.CheckpointSaverListener):
    def __init__(self, stop_at):
        self.events = []
        self.stop_at = stop_at

    def begin(self):
        self.events.append(("begin",))

    def before_save(self, session, global_step_value):
        # The session is a tf.Session over the training graph, which is the default.
        step = session.run(tf.train.get_global_step())
        self.events.append(("before_save", global_step_value, int(step)))

    def after_save(self, session, global_step_value):
        self.events.append(("after_save", global_step_value))
        return global_step_value >= self.stop_at

    def end(self, session, global_step_value):
        self.events.append(("end", global_step_value))


def test_saving_listeners_in_train(model_dir):
    x, y = _data(64)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=model_dir,
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=10))
    listener = RecordingListener(stop_at=20)
    train_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None,
                                                  shuffle=True)
    est.train(train_fn, steps=100, saving_listeners=[listener])
    # TF's order: a save when the session starts, then every 10 steps; after_save
    # returning True at step 20 stops training there; end gets the last step.
    assert listener.events == [
        ("begin",), ("before_save", 0, 0), ("after_save", 0), ("before_save", 10, 10),
        ("after_save", 10), ("before_save", 20, 20), ("after_save", 20), ("end", 20)]
    assert est.get_variable_value("global_step") == 20
    with pytest.raises(TypeError, match="CheckpointSaverListener"):
        est.train(train_fn, steps=1, saving_listeners=[object()])


def _wide_deep_data(n=400, seed=3):
    rng = np.random.RandomState(seed)
    a = rng.uniform(-1, 1, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    color = rng.choice(["red", "green", "blue"], n)
    return a, b, color


def test_dnn_linear_combined_classifier(model_dir):
    a, b, color = _wide_deep_data()
    # The label needs the linear part (the color) and the deep part (a * b's sign).
    labels = ((a * b > 0) ^ (color == "red")).astype(np.int64)
    color_column = tf.feature_column.categorical_column_with_vocabulary_list(
        "color", ["red", "green", "blue"])
    clf = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir, linear_feature_columns=[color_column],
        linear_optimizer=tf.train.FtrlOptimizer(0.3),
        dnn_feature_columns=[tf.feature_column.numeric_column("a"),
                             tf.feature_column.numeric_column("b"),
                             tf.feature_column.indicator_column(color_column)],
        dnn_hidden_units=[16, 16], dnn_optimizer=tf.train.AdamOptimizer(0.02))
    features = {"a": a, "b": b, "color": color.astype(object)}
    clf.train(tf.estimator.inputs.numpy_input_fn(features, labels, batch_size=50,
                                                 num_epochs=None, shuffle=True), steps=600)
    metrics = clf.evaluate(tf.estimator.inputs.numpy_input_fn(features, labels, shuffle=False))
    assert metrics["accuracy"] > 0.85
    names = clf.get_variable_names()
    assert any(n.startswith("linear/") for n in names)
    assert any(n.startswith("dnn/") for n in names)
    first = next(clf.predict(tf.estimator.inputs.numpy_input_fn(
        {k: v[:1] for k, v in features.items()}, shuffle=False)))
    np.testing.assert_allclose(first["probabilities"].sum(), 1.0, rtol=1e-5)


def test_dnn_linear_combined_regressor_and_checks(tmp_path):
    a, b, _ = _wide_deep_data()
    target = (2.0 * a - b + 0.5).astype(np.float32)
    reg = tf.estimator.DNNLinearCombinedRegressor(
        model_dir=str(tmp_path),
        linear_feature_columns=[tf.feature_column.numeric_column("a"),
                                tf.feature_column.numeric_column("b")],
        linear_optimizer=tf.train.FtrlOptimizer(0.5),
        dnn_feature_columns=[tf.feature_column.numeric_column("a")], dnn_hidden_units=[4],
        dnn_optimizer=tf.train.AdagradOptimizer(0.05))
    features = {"a": a, "b": b}
    reg.train(tf.estimator.inputs.numpy_input_fn(features, target, batch_size=50,
                                                 num_epochs=None, shuffle=True), steps=400)
    metrics = reg.evaluate(tf.estimator.inputs.numpy_input_fn(features, target,
                                                              shuffle=False))
    assert metrics["average_loss"] < 0.05
    prediction = next(reg.predict(tf.estimator.inputs.numpy_input_fn(
        {"a": a[:1], "b": b[:1]}, shuffle=False)))
    assert abs(float(prediction["predictions"][0]) - target[0]) < 0.5
    with pytest.raises(ValueError, match="Either linear_feature_columns or dnn_feature_columns"):
        tf.estimator.DNNLinearCombinedRegressor(model_dir=str(tmp_path / "x"))
    with pytest.raises(ValueError, match="dnn_hidden_units must be defined"):
        tf.estimator.DNNLinearCombinedClassifier(
            model_dir=str(tmp_path / "y"),
            dnn_feature_columns=[tf.feature_column.numeric_column("a")])


def test_checkpoint_saver_hook_listeners(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 1])
        w = tf.Variable(tf.zeros([1, 1]), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 2.0 * x))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_or_create_global_step())
        listener = RecordingListener(stop_at=4)
        hook = tf.train.CheckpointSaverHook(str(tmp_path / "ckpt"), save_steps=2,
                                            listeners=[listener])
        steps = 0
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            while not sess.should_stop():
                sess.run(train_op, feed_dict={x: np.ones((4, 1))})
                steps += 1
    assert steps == 4  # after_save(4) returned True
    assert listener.events == [
        ("begin",), ("before_save", 0, 0), ("after_save", 0), ("before_save", 2, 2),
        ("after_save", 2), ("before_save", 4, 4), ("after_save", 4), ("end", 4)]
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt")).endswith("model.ckpt-4")


def test_canned_estimators_warm_start_from(tmp_path):
    """warm_start_from on the canned estimators: a new estimator starts from the old
    one's variables (SGD at rate 0 keeps them for the comparison)."""
    a, b, _ = _wide_deep_data(100)
    target = (a - b).astype(np.float32)
    columns = [tf.feature_column.numeric_column("a"), tf.feature_column.numeric_column("b")]
    features = {"a": a, "b": b}
    train_fn = tf.estimator.inputs.numpy_input_fn(features, target, batch_size=20,
                                                  num_epochs=None, shuffle=True)
    first = tf.estimator.DNNRegressor([4], columns, model_dir=str(tmp_path / "first"),
                                      optimizer=tf.train.AdamOptimizer(0.05))
    first.train(train_fn, steps=20)
    for make in (
            lambda d, w: tf.estimator.DNNRegressor(
                [4], columns, model_dir=d, warm_start_from=w,
                optimizer=tf.train.GradientDescentOptimizer(0.0)),
            lambda d, w: tf.estimator.DNNLinearCombinedRegressor(
                model_dir=d, dnn_feature_columns=columns, dnn_hidden_units=[4],
                dnn_optimizer=tf.train.GradientDescentOptimizer(0.0), warm_start_from=w)):
        model_dir = str(tmp_path / ("second_%d" % len(os.listdir(str(tmp_path)))))
        second = make(model_dir, tf.estimator.WarmStartSettings(str(tmp_path / "first"),
                                                                vars_to_warm_start="dnn/.*"))
        second.train(train_fn, steps=1)
        kernel = "dnn/hiddenlayer_0/kernel"
        assert kernel in second.get_variable_names()
        np.testing.assert_allclose(second.get_variable_value(kernel),
                                   first.get_variable_value(kernel))


def test_canned_dnn_activation_fn(tmp_path):
    """activation_fn=tf.nn.tanh: predictions are tanh(x W0 + b0) W1 + b1 with the trained
    variables (a relu network would not match)."""
    a, b, _ = _wide_deep_data(100)
    target = (a * b).astype(np.float32)
    columns = [tf.feature_column.numeric_column("a"), tf.feature_column.numeric_column("b")]
    reg = tf.estimator.DNNRegressor([3], columns, model_dir=str(tmp_path),
                                    activation_fn=tf.nn.tanh,
                                    optimizer=tf.train.AdamOptimizer(0.05))
    reg.train(tf.estimator.inputs.numpy_input_fn({"a": a, "b": b}, target, batch_size=20,
                                                 num_epochs=None, shuffle=True), steps=20)
    got = np.stack([p["predictions"] for p in reg.predict(tf.estimator.inputs.numpy_input_fn(
        {"a": a[:5], "b": b[:5]}, shuffle=False))])
    value = reg.get_variable_value
    x = np.stack([a[:5], b[:5]], axis=1)
    hidden = np.tanh(x @ value("dnn/hiddenlayer_0/kernel") + value("dnn/hiddenlayer_0/bias"))
    expected = hidden @ value("dnn/logits/kernel") + value("dnn/logits/bias")
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(NotImplementedError, match="tf.nn.tanh"):
        tf.estimator.DNNClassifier([3], columns, model_dir=str(tmp_path / "x"),
                                   activation_fn=lambda t: t)


def test_tensor_serving_input_receiver(tmp_path):
    """model_fn taking features as one tensor (an input_fn returning a tensor); the export
    feeds it through TensorServingInputReceiver."""
    x, y = _data(64)

    def model_fn(features, labels, mode):
        assert isinstance(features, tf.Tensor)
        predictions = tf.layers.dense(features, 1, name="linear")
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions})
        loss = tf.losses.mean_squared_error(labels, predictions)
        train_op = tf.train.GradientDescentOptimizer(0.2).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(16)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "model"))
    est.train(input_fn, steps=5)

    def serving():
        inp = tf.placeholder(tf.float32, [None, 2], name="x")
        return tf.estimator.export.TensorServingInputReceiver(inp, {"x": inp})

    path = est.export_saved_model(str(tmp_path / "export"), serving)
    out = tf.contrib.predictor.from_saved_model(path)({"x": x[:3]})
    np.testing.assert_allclose(out["y"], x[:3] @ est.get_variable_value("linear/kernel") +
                               est.get_variable_value("linear/bias"), rtol=1e-5)
    with pytest.raises(ValueError, match="Tensor"):
        tf.estimator.export.TensorServingInputReceiver({"x": x}, {})
