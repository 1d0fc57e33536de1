"""A Dataset returned by a Python input_fn runs as the Estimator's own input: its position
is saved in every checkpoint, so a run stopped (or killed) and resumed sees exactly the
batches, and so the losses, of an uninterrupted run."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import loom.compat.v1 as tf

N = 50  # examples: 8-example batches cross epochs mid-batch


def _arrays():
    rng = np.random.RandomState(3)
    x = np.arange(N, dtype=np.float32).reshape(N, 1) * np.float32(0.01)
    x = np.concatenate([x, rng.uniform(-1, 1, size=(N, 1)).astype(np.float32)], axis=1)
    y = (2.0 * x[:, :1] - x[:, 1:] + 0.25).astype(np.float32)
    return x, y


def input_fn():
    x, y = _arrays()
    ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    # An unseeded shuffle takes its seed from the graph seed (tf_random_seed) and the
    # iterator's saved state; the map is traced into ops.
    ds = ds.shuffle(20).repeat().map(lambda f, l: ({"x": f["x"] * 2.0}, l))
    return ds.batch(8).prefetch(2)


class Recorder(tf.train.SessionRunHook):
    """Records (global step, first column of the batch, loss) of every step."""

    def __init__(self, tensors, out):
        self._tensors = tensors
        self._out = out

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._tensors)

    def after_run(self, run_context, run_values):
        step, x, loss = run_values.results
        self._out.append((int(step), [float(v) for v in x[:, 0]], float(loss)))
        kill_at = os.environ.get("LOOM_TEST_KILL_AT_STEP")
        if kill_at is not None and len(self._out) == int(kill_at):
            with open(os.environ["LOOM_TEST_RECORD"], "w") as f:
                json.dump(self._out, f)
            os.kill(os.getpid(), 9)


RECORDED = []


def model_fn(features, labels, mode):
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) + b - labels))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.train.get_global_step())
    hook = Recorder([tf.train.get_global_step(), features["x"], loss], RECORDED)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      training_hooks=[hook])


def _estimator(model_dir, save_steps=None):
    kwargs = {} if save_steps is None else {"save_checkpoints_steps": save_steps}
    config = tf.estimator.RunConfig(model_dir=str(model_dir), tf_random_seed=11, **kwargs)
    return tf.estimator.Estimator(model_fn, config=config)


def _train(model_dir, input_fn=input_fn, **kwargs):
    del RECORDED[:]
    _estimator(model_dir).train(input_fn, **kwargs)
    return list(RECORDED)


def test_stop_and_resume_sees_the_batches_of_an_uninterrupted_run(tmp_path):
    whole = _train(tmp_path / "whole", steps=20)
    steps = [s for s, _, _ in whole]
    assert steps == list(range(steps[0], steps[0] + 20))
    first = _train(tmp_path / "parts", steps=9)  # stops mid-epoch (72 of 50 examples)
    second = _train(tmp_path / "parts", steps=11)
    assert len(first) == 9 and len(second) == 11
    assert first + second == whole  # the same batches and the same losses, bit for bit
    # Not a trivial pass: the shuffle makes batches differ between epochs.
    assert whole[0][1] != whole[7][1]


def test_a_restarted_input_fn_without_the_position_would_differ(tmp_path):
    # The control for the test above: a fresh model_dir restarts the input, so the 10th
    # step's batch differs from the resumed one's.
    whole = _train(tmp_path / "whole", steps=12)
    fresh = _train(tmp_path / "fresh", steps=3)
    assert whole[9][1] != fresh[0][1]


def test_killed_mid_training_resumes_from_the_checkpointed_position(tmp_path):
    whole = _train(tmp_path / "whole", steps=20)
    record = tmp_path / "killed.json"
    env = dict(os.environ, LOOM_TEST_KILL_AT_STEP="13", LOOM_TEST_RECORD=str(record))
    code = ("import sys; sys.path.insert(0, %r); import test_estimator_input as t; "
            "t._estimator(%r, save_steps=5).train(t.input_fn, steps=20)"
            % (os.path.dirname(__file__), str(tmp_path / "killed")))
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=120)
    assert proc.returncode == -9  # killed by SIGKILL at step 13: no final checkpoint
    with open(record) as f:
        killed = [tuple(r) for r in json.load(f)]
    assert killed == whole[:13]
    assert tf.train.latest_checkpoint(str(tmp_path / "killed")).endswith("-10")
    resumed = _train(tmp_path / "killed", max_steps=20)  # resumes at step 10
    assert len(resumed) == 10
    assert resumed == whole[10:]


def test_features_only_and_single_tensor_datasets(tmp_path):
    x, y = _arrays()
    seen = {}

    def model_fn(features, labels, mode):
        # Tensors die with the graph when train returns: keep what they are.
        seen["features"] = (features.shape.as_list() if isinstance(features, tf.Tensor)
                            else sorted(features))
        seen["labels"] = None if labels is None else labels.shape.as_list()
        w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        x = features if not isinstance(features, dict) else features["x"]
        loss = tf.reduce_mean(tf.matmul(x, w))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "a"))
    # A dict without labels, even with a key named "label", is features only.
    est.train(lambda: tf.data.Dataset.from_tensor_slices({"x": x, "label": y}).batch(5), steps=2)
    assert seen["features"] == ["label", "x"] and seen["labels"] is None
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "b"))
    est.train(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(5), steps=2)
    assert seen["features"] == [None, 2] and seen["labels"] == [None, 1]


def _rows(values):
    """int64 values as (features {"x": [v/100, 1]}, label 2v/100) rows."""
    x = tf.cast(values, tf.float32) * 0.01
    return {"x": tf.stack([x, tf.ones_like(x)], axis=1)}, tf.expand_dims(x * 2.0, 1)


def interleave_input_fn():
    # Five blocks of ten, two open at a time, three rows from each in turn; the restore
    # calls the Python function again for the open blocks.
    ds = tf.data.Dataset.range(0, 50, 10).repeat().interleave(
        lambda start: tf.data.Dataset.range(start, start + 10), cycle_length=2, block_length=3)
    return ds.batch(4).map(_rows)


def generator_input_fn():
    def rows():
        rng = np.random.RandomState(5)  # deterministic: a restore replays it exactly
        while True:
            v = rng.uniform(-1, 1)
            yield {"x": [v, 1.0]}, [2.0 * v]
    ds = tf.data.Dataset.from_generator(rows, ({"x": tf.float32}, tf.float32),
                                        ({"x": [2]}, [1]))
    return ds.batch(4)


@pytest.mark.parametrize("fn", [interleave_input_fn, generator_input_fn])
def test_interleave_and_generator_inputs_resume_exactly(tmp_path, fn):
    whole = _train(tmp_path / "whole", fn, steps=16)
    first = _train(tmp_path / "parts", fn, steps=7)
    second = _train(tmp_path / "parts", fn, steps=9)
    assert first + second == whole
    assert len({tuple(x) for _, x, _ in whole}) == 16  # every batch differs


def test_predict_twice_over_a_dataset_with_one_prediction_tensor(model_dir):
    # The second predict reuses the cached graph (no model_fn call): its predictions
    # are still arrays, not {"output": array} dicts.
    x, y = _arrays()

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [2, 1], initializer=tf.ones_initializer())
        out = tf.matmul(features["x"], w)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions=out)
        loss = tf.reduce_mean(tf.square(out - labels))
        train_op = tf.train.GradientDescentOptimizer(0.0).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(10), steps=1)
    predict_fn = lambda: tf.data.Dataset.from_tensor_slices({"x": x[:3]}).batch(2)  # noqa
    for _ in range(2):
        p = list(est.predict(predict_fn))
        assert len(p) == 3 and isinstance(p[0], np.ndarray)
        np.testing.assert_allclose(np.concatenate(p), x[:3].sum(axis=1), rtol=1e-6)


def test_evaluate_reuses_the_graph_for_a_dataset_input(model_dir):
    # As for a C++ input_fn's Dataset: the second evaluate resets the cached graph's
    # iterator instead of building the graph (and calling model_fn) again.
    calls = []

    def counting_model_fn(features, labels, mode):
        calls.append(mode)
        return model_fn(features, labels, mode)

    est = tf.estimator.Estimator(counting_model_fn, model_dir=model_dir)
    x, y = _arrays()
    eval_fn = lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(10)  # noqa
    est.train(input_fn, steps=2)
    first = est.evaluate(eval_fn)
    second = est.evaluate(eval_fn)
    assert calls.count(tf.estimator.ModeKeys.EVAL) == 1
    assert first == second and first["global_step"] == 2


def test_a_generator_that_cannot_replay_its_position_is_a_clear_error(tmp_path):
    # A generator's position is restored by replaying it; one that yields less the second
    # time cannot be resumed, and the error says so.
    runs = []

    def fn():
        def rows():
            runs.append(1)
            for v in range(40 if len(runs) == 1 else 4):
                yield {"x": [v * 0.01, 1.0]}, [v * 0.02]
        return tf.data.Dataset.from_generator(
            rows, ({"x": tf.float32}, tf.float32), ({"x": [2]}, [1])).batch(4)

    _train(tmp_path, fn, steps=5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="replays 20 elements"):
        _train(tmp_path, fn, steps=1)
