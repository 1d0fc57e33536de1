"""tf.train's checkpoint utilities (list_variables, load_variable, load_checkpoint /
NewCheckpointReader, init_from_checkpoint) on Loom's checkpoints and TF's (the golden TF
bundles under testdata/tf, with the steering side's expected values), and
tf.train.ExponentialMovingAverage against float64 references of TF 1.15's formulas."""
import json
import os

import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _tf_dir():
    root = os.environ.get("LOOM_SOURCE_DIR",
                          os.path.join(os.path.dirname(__file__), "..", ".."))
    return os.path.join(root, "testdata", "tf")


def _expected(key):
    with open(os.path.join(_tf_dir(), "expected_tf.json")) as f:
        return json.load(f)["checkpoints"][key]["tensors"]


def _loom_checkpoint(tmp_path):
    """A Loom checkpoint with scope/w [2,3] float32, scope/b [3] float32, other [] float64
    and the global step; returns its path and the values."""
    values = {"scope/w": np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5,
              "scope/b": np.array([1.0, -2.0, 3.0], np.float32),
              "other": np.float64(7.25)}
    with tf.Graph().as_default():
        with tf.variable_scope("scope"):
            tf.get_variable("w", initializer=tf.constant(values["scope/w"]))
            tf.get_variable("b", initializer=tf.constant(values["scope/b"]))
        tf.Variable(values["other"], name="other")
        tf.train.get_or_create_global_step()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=42)
    return path, values


def test_list_and_load_a_loom_checkpoint(tmp_path):
    path, values = _loom_checkpoint(tmp_path)
    listed = tf.train.list_variables(path)
    assert listed == [("global_step", []), ("other", []), ("scope/b", [3]),
                      ("scope/w", [2, 3])]
    assert tf.train.list_variables(str(tmp_path)) == listed  # a directory: its newest
    np.testing.assert_array_equal(tf.train.load_variable(path, "scope/w"), values["scope/w"])
    assert tf.train.load_variable(str(tmp_path), "other:0") == 7.25
    reader = tf.train.load_checkpoint(path)
    assert reader.has_tensor("scope/b") and not reader.has_tensor("scope/missing")
    assert reader.get_variable_to_shape_map()["scope/w"] == [2, 3]
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["other"] == tf.float64 and dtypes["global_step"] == tf.int64
    assert path.endswith("model.ckpt-42") and reader.get_tensor("global_step") == 0
    with pytest.raises(tf.errors.NotFoundError, match="scope/missing"):
        reader.get_tensor("scope/missing")


def test_read_tf_bundles_as_tf_does():
    prefix = os.path.join(_tf_dir(), "half_plus_two", "00000123", "variables", "variables")
    want = _expected("half_plus_two/00000123/variables/variables")
    listed = tf.train.list_variables(prefix)
    assert [n for n, _ in listed] == sorted(want)
    reader = tf.train.NewCheckpointReader(prefix)
    for name, t in want.items():
        assert reader.get_variable_to_shape_map()[name] == t["shape"]
        assert reader.get_variable_to_dtype_map()[name] == tf.float32
        assert float(np.sum(reader.get_tensor(name), dtype=np.float64)) == t["sum"]
    ckpt = os.path.join(_tf_dir(), "tfx_estimator_ckpt", "model.ckpt-999")
    want = _expected("tfx_estimator_ckpt/model.ckpt-999")
    assert tf.train.load_variable(ckpt, "global_step") == 999
    name = next(n for n, t in sorted(want.items()) if len(t["shape"]) == 2)
    value = tf.train.load_variable(ckpt, name)
    assert list(value.shape) == want[name]["shape"]
    np.testing.assert_allclose(float(np.sum(value, dtype=np.float64)), want[name]["sum"],
                               rtol=1e-6)


def test_a_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.load_checkpoint(str(tmp_path))
    with pytest.raises(ValueError, match="no checkpoint at"):
        tf.train.list_variables(str(tmp_path / "nothing.ckpt"))


def _values(names):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return {n: sess.run(tf.get_default_graph().get_tensor_by_name(n + ":0")) for n in names}


def test_init_from_checkpoint_one_to_one_and_scope_to_scope(tmp_path):
    path, values = _loom_checkpoint(tmp_path)
    with tf.variable_scope("new"):
        w = tf.get_variable("w", [2, 3])
        tf.get_variable("b", [3])
    o = tf.get_variable("mine", [], dtype=tf.float64)
    untouched = tf.get_variable("untouched", initializer=tf.constant(5.0))
    tf.train.init_from_checkpoint(path, {"scope/": "new/", "other": o})
    got = _values(["new/w", "new/b", "mine", "untouched"])
    np.testing.assert_array_equal(got["new/w"], values["scope/w"])
    np.testing.assert_array_equal(got["new/b"], values["scope/b"])
    assert got["mine"] == 7.25 and got["untouched"] == 5.0
    assert w.initial_value.op.name == "new/w/checkpoint_initializer"


def test_init_from_checkpoint_root_scope_and_variable_names(tmp_path):
    path, values = _loom_checkpoint(tmp_path)
    with tf.variable_scope("outer"):
        with tf.variable_scope("scope"):
            tf.get_variable("w", [2, 3])
    tf.get_variable("b", [3])
    # '/': 'outer/': every variable under outer/ from the same name without the prefix.
    tf.train.init_from_checkpoint(str(tmp_path), {"/": "outer/", "scope/b": "b"})
    got = _values(["outer/scope/w", "b"])
    np.testing.assert_array_equal(got["outer/scope/w"], values["scope/w"])
    np.testing.assert_array_equal(got["b"], values["scope/b"])


def test_init_from_checkpoint_errors_as_tf(tmp_path):
    path, _ = _loom_checkpoint(tmp_path)
    tf.get_variable("w", [2, 3])
    tf.get_variable("small", [2])
    with pytest.raises(ValueError, match="Tensor nope is not found"):
        tf.train.init_from_checkpoint(path, {"nope": "w"})
    with pytest.raises(ValueError, match="Shape of variable small"):
        tf.train.init_from_checkpoint(path, {"scope/b": "small"})
    with pytest.raises(ValueError, match="should map to scope only"):
        tf.train.init_from_checkpoint(path, {"scope/w": "nosuch/"})
    with tf.variable_scope("s2"):
        tf.get_variable("extra", [1])
    with pytest.raises(ValueError, match="Tensor scope/extra .* is not found"):
        tf.train.init_from_checkpoint(path, {"scope/": "s2/"})


def test_init_from_checkpoint_reads_tf_checkpoints():
    prefix = os.path.join(_tf_dir(), "half_plus_two", "00000123", "variables", "variables")
    a = tf.get_variable("my_a", [])
    tf.train.init_from_checkpoint(prefix, {"b": a})
    assert _values(["my_a"])["my_a"] == 2.0


def test_exponential_moving_average_matches_tf_formula():
    w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
    step = tf.Variable(0, dtype=tf.int64, name="n", trainable=False)
    new_w = tf.placeholder(tf.float32, [2])
    set_w = tf.assign(w, new_w)
    ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
    with tf.control_dependencies([set_w]):
        update = ema.apply([w])
    with tf.control_dependencies([update]):
        bump = tf.assign_add(step, 1)
    avg = ema.average(w)
    assert avg.op.name == "w/ExponentialMovingAverage" == ema.average_name(w)
    assert not avg.trainable
    assert w in tf.moving_average_variables()
    rng = np.random.RandomState(0)
    ref = np.array([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(avg), [1.0, 2.0])  # starts at w's value
        for n in range(5):
            x = rng.randn(2).astype(np.float32)
            sess.run(bump, {new_w: x})
            decay = min(0.99, (1.0 + n) / (10.0 + n))
            ref = ref - (ref - x.astype(np.float64)) * (1.0 - decay)
            np.testing.assert_allclose(sess.run(avg), ref, rtol=1e-5)


def test_ema_shadow_starts_at_a_random_variables_value_and_restores():
    w = tf.get_variable("w", [3], initializer=tf.random_normal_initializer(seed=1))
    ema = tf.train.ExponentialMovingAverage(0.5)
    ema.apply([w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(ema.average(w)), sess.run(w))
    names = ema.variables_to_restore()
    assert names["w/ExponentialMovingAverage"] is w
    assert "w" not in names
    with pytest.raises(TypeError, match="half, float, or double"):
        ema.apply([tf.Variable(1, name="i")])


def test_the_classic_ema_program():
    """The tutorial program ported TF1 code is full of: an int32 step as num_updates."""
    v1 = tf.Variable(0, dtype=tf.float32)
    step = tf.Variable(0, trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.99, step)
    maintain = ema.apply([v1])
    got = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got.append(sess.run([v1, ema.average(v1)]))
        sess.run(tf.assign(v1, 5))
        sess.run(maintain)
        got.append(sess.run([v1, ema.average(v1)]))
        sess.run(tf.assign(step, 10000))
        sess.run(tf.assign(v1, 10))
        sess.run(maintain)
        got.append(sess.run([v1, ema.average(v1)]))
        sess.run(maintain)
        got.append(sess.run([v1, ema.average(v1)]))
    # float64 references: decay min(0.99, 1/10) = 0.1, then min(0.99, 10001/10010) = 0.99.
    want = [[0.0, 0.0], [5.0, 4.5], [10.0, 4.555], [10.0, 4.555 + (10 - 4.555) * 0.01]]
    np.testing.assert_allclose(np.array(got, np.float64), want, rtol=1e-6)
    with pytest.raises(ValueError, match="Moving average already computed for"):
        ema.apply([v1])


def test_ema_variables_to_restore_evaluates_with_the_averages(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable(1.0, name="w")
        ema = tf.train.ExponentialMovingAverage(0.5)
        with tf.control_dependencies([tf.assign(w, 3.0)]):
            update = ema.apply([w])
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(update)  # average: 1 - (1 - 3) * 0.5 = 2
            path = saver.save(sess, str(tmp_path / "m.ckpt"))
    assert tf.train.load_variable(path, "w/ExponentialMovingAverage") == 2.0
    with tf.Graph().as_default():
        w = tf.Variable(0.0, name="w")
        restore = tf.train.Saver(tf.train.ExponentialMovingAverage(0.5).variables_to_restore())
        with tf.Session() as sess:
            restore.restore(sess, path)
            assert sess.run(w) == 2.0


def test_init_from_checkpoint_in_an_estimator_model_fn(tmp_path):
    """TF1's warm start inside model_fn: the Estimator's Scaffold runs the overridden
    initializers."""
    with tf.Graph().as_default():
        tf.Variable(np.array([[2.0], [3.0]], np.float32), name="pre/kernel")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "pre" / "model.ckpt"))

    def model_fn(features, labels, mode, params):
        k = tf.get_variable("dense/kernel", [2, 1])
        tf.train.init_from_checkpoint(path, {"pre/kernel": "dense/kernel"})
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], k) - labels))
        train = tf.train.GradientDescentOptimizer(0.0).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(
            ({"x": np.ones((4, 2), np.float32)}, np.ones((4, 1), np.float32))).batch(2)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "est"))
    est.train(input_fn, max_steps=1)
    np.testing.assert_array_equal(est.get_variable_value("dense/kernel"), [[2.0], [3.0]])
