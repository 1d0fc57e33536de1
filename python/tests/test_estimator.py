"""tf.estimator from Python: a Python model_fn called with only the arguments it declares,
numpy_input_fn, train / evaluate / predict / export_saved_model / train_and_evaluate, a
canned DNNClassifier over feature columns, and errors raised in Python code that the C++
loop calls."""
import os

import numpy as np
import pytest

import loom.compat.v1 as tf


def _data(n=256, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    y = (3.0 * x[:, :1] - 2.0 * x[:, 1:] + 0.5).astype(np.float32)
    return x, y


def linear_model_fn(features, labels, mode):
    """Three declared arguments only: no params, no config."""
    predictions = tf.layers.dense(features["x"], 1, name="linear")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions})
    loss = tf.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "mae": tf.metrics.mean_absolute_error(labels, predictions)})
    train_op = tf.train.GradientDescentOptimizer(0.2).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fns(x, y):
    train = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None,
                                               shuffle=True)
    evaluate = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=64, shuffle=False)
    predict = tf.estimator.inputs.numpy_input_fn({"x": x[:5]}, batch_size=2, shuffle=False)
    return train, evaluate, predict


def test_train_evaluate_predict(model_dir):
    x, y = _data()
    train_fn, eval_fn, predict_fn = _input_fns(x, y)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=model_dir)
    assert est.train(train_fn, steps=150) is est
    metrics = est.evaluate(eval_fn)
    assert metrics["global_step"] == 150
    assert metrics["loss"] < 0.01
    assert 0 <= metrics["mae"] < 0.1
    # steps is relative, max_steps absolute (and resumes from the checkpoint).
    est.train(train_fn, steps=10)
    assert est.evaluate(eval_fn)["global_step"] == 160
    est.train(train_fn, max_steps=100)  # already past: nothing runs
    assert est.evaluate(eval_fn)["global_step"] == 160
    predictions = est.predict(predict_fn)
    assert not isinstance(predictions, (list, tuple))  # a generator
    predictions = list(predictions)
    assert len(predictions) == 5
    assert predictions[0]["y"].shape == (1,)
    np.testing.assert_allclose([p["y"][0] for p in predictions], y[:5, 0], atol=0.1)
    assert "linear/kernel" in est.get_variable_names()
    kernel = est.get_variable_value("linear/kernel")
    np.testing.assert_allclose(kernel[:, 0], [3.0, -2.0], atol=0.1)


def test_model_fn_gets_params_and_config_when_it_declares_them(tmp_path):
    seen = {}

    def model_fn(features, labels, mode, params, config):
        seen["params"], seen["config"], seen["mode"] = params, config, mode
        w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        train_op = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    x, y = _data(64)
    config = tf.estimator.RunConfig(model_dir=str(tmp_path), tf_random_seed=7)
    est = tf.estimator.Estimator(model_fn, config=config, params={"lr": 0.1})
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False), steps=1)
    assert seen["params"] == {"lr": 0.1}
    assert seen["config"].model_dir == str(tmp_path)
    assert seen["config"].tf_random_seed == 7
    assert seen["mode"] == tf.estimator.ModeKeys.TRAIN


def test_input_fn_returning_tensors_and_a_lambda(tmp_path):
    x, y = _data(64)

    def input_fn():
        return {"x": tf.constant(x)}, tf.constant(y)

    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "a"))
    est.train(input_fn, steps=3)
    assert est.evaluate(input_fn, steps=1)["global_step"] == 3
    # numpy_input_fn's function called from the user's own function, as TF code does.
    np_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, num_epochs=None, shuffle=True)
    est2 = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "b"))
    est2.train(input_fn=lambda: np_fn(), steps=2)
    assert est2.evaluate(input_fn, steps=1)["global_step"] == 2


class ModelFnError(Exception):
    pass


def test_exception_in_model_fn_arrives_intact_and_leaves_model_dir_clean(tmp_path):
    def bad_model_fn(features, labels, mode):
        raise ModelFnError("model_fn broke: shapes are wrong in layer 'x'")

    x, y = _data(16)
    est = tf.estimator.Estimator(bad_model_fn, model_dir=str(tmp_path))
    fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False)
    with pytest.raises(ModelFnError, match="model_fn broke: shapes are wrong in layer 'x'"):
        est.train(fn, steps=1)
    assert [n for n in os.listdir(tmp_path) if "ckpt" in n or ".tmp" in n] == []
    # The model_dir lock was released: another trainer can use the directory.
    good = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path))
    good.train(fn, steps=1)
    assert good.latest_checkpoint().endswith("model.ckpt-1")


class StepHookError(Exception):
    pass


class FailAtStep(tf.train.SessionRunHook):
    def begin(self):
        self.step = tf.train.get_global_step()

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self.step)

    def after_run(self, run_context, run_values):
        if run_values.results == 3:
            raise StepHookError("stop at step 3")


def test_exception_in_a_training_hook(tmp_path):
    x, y = _data(64)
    train_fn, _, _ = _input_fns(x, y)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=1))
    with pytest.raises(StepHookError, match="stop at step 3"):
        est.train(train_fn, steps=10, hooks=[FailAtStep()])
    names = os.listdir(tmp_path)
    assert not [n for n in names if ".tmp" in n], names
    # The checkpoints written before the error are whole: training resumes from one.
    est.train(train_fn, steps=1)
    assert est.evaluate(_input_fns(x, y)[1])["global_step"] in (3, 4)


def test_logging_hook_by_name_in_training(model_dir):
    x, y = _data(64)
    seen = []

    def model_fn(features, labels, mode):
        out = tf.layers.dense(features["x"], 1)
        tf.identity(out, name="prediction_tensor")
        loss = tf.losses.mean_squared_error(labels, out)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    hook = tf.train.LoggingTensorHook({"p": "prediction_tensor"}, every_n_iter=2,
                                      formatter=lambda v: seen.append(v["p"].shape) or "")
    est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
    est.train(_input_fns(x, y)[0], steps=4, hooks=[hook])
    assert seen == [(32, 1), (32, 1)]


def test_export_saved_model(tmp_path):
    x, y = _data(64)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "model"))
    est.train(_input_fns(x, y)[0], steps=2)

    def serving_input_fn():
        inp = tf.placeholder(tf.float32, [None, 2], name="x")
        return tf.estimator.export.ServingInputReceiver({"x": inp}, {"x": inp})

    path = est.export_saved_model(str(tmp_path / "export"), serving_input_fn)
    assert isinstance(path, bytes)
    assert os.path.isdir(path)
    assert any(n.startswith("saved_model") for n in os.listdir(path.decode()))


def test_dnn_classifier_with_feature_columns(model_dir):
    rng = np.random.RandomState(1)
    a = rng.normal(size=300).astype(np.float32)
    b = rng.normal(size=300).astype(np.float32)
    labels = (a + b > 0).astype(np.int32)
    columns = [tf.feature_column.numeric_column("a"), tf.feature_column.numeric_column("b")]
    clf = tf.estimator.DNNClassifier(hidden_units=[8], feature_columns=columns, n_classes=2,
                                     optimizer=tf.train.AdamOptimizer(0.05),
                                     model_dir=model_dir)
    train_fn = tf.estimator.inputs.numpy_input_fn({"a": a, "b": b}, labels, batch_size=50,
                                                  num_epochs=None, shuffle=True)
    clf.train(train_fn, steps=200)
    eval_fn = tf.estimator.inputs.numpy_input_fn({"a": a, "b": b}, labels, shuffle=False)
    metrics = clf.evaluate(eval_fn)
    assert metrics["accuracy"] > 0.9
    first = next(clf.predict(tf.estimator.inputs.numpy_input_fn(
        {"a": a[:1], "b": b[:1]}, shuffle=False)))
    assert int(first["class_ids"][0]) in (0, 1)
    assert first["probabilities"].shape == (2,)


def test_train_and_evaluate(tmp_path):
    x, y = _data(128)
    train_fn, eval_fn, _ = _input_fns(x, y)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=20))
    metrics, _ = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_fn, max_steps=40),
        tf.estimator.EvalSpec(eval_fn, steps=None, start_delay_secs=0, throttle_secs=1))
    assert metrics["global_step"] == 40
    assert os.path.isdir(os.path.join(str(tmp_path), "eval"))


def test_argument_errors(tmp_path):
    x, y = _data(8)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path))
    fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False)
    with pytest.raises(ValueError, match="both steps and max_steps"):
        est.train(fn, steps=1, max_steps=2)
    with pytest.raises(ValueError, match="shuffle"):
        tf.estimator.inputs.numpy_input_fn({"x": x}, y)
    with pytest.raises(ValueError, match="features"):
        tf.estimator.Estimator(lambda a, b: None)
    with pytest.raises(tf.errors.FailedPreconditionError, match="checkpoint"):
        list(tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "empty"))
             .predict(fn))


def test_training_loop_releases_the_gil(model_dir):
    """Another Python thread runs while the C++ loop trains (no Python hooks, a C++ input
    function): with the GIL held it would not get a single iteration in."""
    import threading
    import time

    x, y = _data(256)
    fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=256, num_epochs=None,
                                            shuffle=True)
    est = tf.estimator.Estimator(linear_model_fn, model_dir=model_dir)
    est.train(fn, steps=1)  # builds once outside the measurement
    # The measured loop must run long enough for the counter to get its iterations in: a
    # fixed 300 steps took 0.02 s on a fast machine (50,000 steps/s) and the count stayed
    # under the bar. Time 300 steps, then train for about half a second.
    start = time.perf_counter()
    est.train(fn, steps=300)
    elapsed = time.perf_counter() - start
    steps = int(min(200000, max(300, 300 * 0.5 / max(elapsed, 1e-6))))
    counts = {"during": 0}
    training = threading.Event()
    done = threading.Event()

    def count():
        while not done.is_set():
            if training.is_set():
                counts["during"] += 1
            time.sleep(0)

    thread = threading.Thread(target=count)
    thread.start()
    try:
        training.set()
        est.train(fn, steps=steps)
        training.clear()
    finally:
        done.set()
        thread.join()
    # Thousands on an idle machine, hundreds under load. Held, the counting thread would run
    # only when model_fn's Python code switches threads: a handful of iterations.
    assert counts["during"] > 100, counts


def test_warm_start_from_another_model_dir(tmp_path):
    x, y = _data(128)
    train_fn, eval_fn, _ = _input_fns(x, y)
    first = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "first"))
    first.train(train_fn, steps=100)
    trained = first.get_variable_value("linear/kernel")
    second = tf.estimator.Estimator(
        linear_model_fn, model_dir=str(tmp_path / "second"),
        warm_start_from=tf.estimator.WarmStartSettings(str(tmp_path / "first"),
                                                       vars_to_warm_start="linear/.*"))
    second.train(train_fn, steps=1)
    # One step of SGD from the warm-started kernel, not from a fresh initialization.
    np.testing.assert_allclose(second.get_variable_value("linear/kernel"), trained, atol=0.05)
    assert second.evaluate(eval_fn)["loss"] < 0.05


# loss_reduction of the canned estimators (it was accepted and ignored: every one used
# SUM_OVER_BATCH_SIZE). TF 1.15's v1 canned estimators default to Reduction.SUM.
def _linear_regressor_after_one_step(tmp_path, **kwargs):
    xs = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    ys = np.array([[2.0], [1.0], [-1.0], [3.0]], np.float32)
    est = tf.estimator.LinearRegressor(
        [tf.feature_column.numeric_column("x")], model_dir=str(tmp_path),
        optimizer=tf.train.GradientDescentOptimizer(0.01), **kwargs)
    input_fn = tf.estimator.inputs.numpy_input_fn({"x": xs}, ys, batch_size=4, num_epochs=1,
                                                  shuffle=False)
    est.train(input_fn, steps=1)
    weight = [n for n in est.get_variable_names() if n.endswith("x/weights")][0]
    return est, est.get_variable_value(weight), est.evaluate(input_fn), xs, ys


def test_canned_loss_reduction_default_is_tf1s_sum(tmp_path):
    _, w_sum, m_sum, xs, ys = _linear_regressor_after_one_step(tmp_path / "sum")
    _, w_mean, m_mean, _, _ = _linear_regressor_after_one_step(
        tmp_path / "mean", loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE)
    x, y = xs.astype(np.float64), ys.astype(np.float64)
    # From zero weights, one SGD step on the summed squared error: w = -lr * sum(-2 x y).
    np.testing.assert_allclose(w_sum, 0.01 * np.sum(2 * x * y, axis=0, keepdims=True).T,
                               rtol=1e-5)
    np.testing.assert_allclose(w_mean, w_sum / 4, rtol=1e-5)  # the batch of 4 averaged
    # evaluate's "loss" is the training loss (its reduction); average_loss the mean.
    np.testing.assert_allclose(m_sum["loss"], m_sum["average_loss"] * 4, rtol=1e-5)
    np.testing.assert_allclose(m_mean["loss"], m_mean["average_loss"], rtol=1e-5)


def test_canned_loss_reduction_none_is_invalid(model_dir):
    with pytest.raises(ValueError, match="Invalid loss_reduction: none"):
        tf.estimator.DNNClassifier([4], [tf.feature_column.numeric_column("x")],
                                   model_dir=model_dir, loss_reduction=tf.losses.Reduction.NONE)
