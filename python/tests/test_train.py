"""tf.train's optimizers, global step, schedules and Saver; tf.summary; gradients through
a softmax regression."""
import glob
import os

import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _regression():
    rng = np.random.RandomState(0)
    xs = rng.randn(64, 3).astype(np.float32)
    ys = xs @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    return x, y, xs, ys, w, b, loss


@pytest.mark.parametrize("make", [
    lambda: tf.train.GradientDescentOptimizer(0.1),
    lambda: tf.train.MomentumOptimizer(0.05, 0.9),
    lambda: tf.train.AdamOptimizer(0.05),
    lambda: tf.train.RMSPropOptimizer(0.05),
    lambda: tf.train.AdagradOptimizer(0.5),
])
def test_optimizers_minimize_and_increment_the_global_step(make):
    x, y, xs, ys, w, b, loss = _regression()
    step = tf.train.get_or_create_global_step()
    train_op = make().minimize(loss, global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: xs, y: ys})
        for _ in range(100):
            sess.run(train_op, {x: xs, y: ys})
        last = sess.run(loss, {x: xs, y: ys})
        assert sess.run(step) == 100
    assert last < 0.2 * first


def test_compute_and_apply_gradients_by_hand():
    x, y, xs, ys, w, b, loss = _regression()
    opt = tf.train.GradientDescentOptimizer(0.1)
    gvs = opt.compute_gradients(loss)
    assert {v for _, v in gvs} == {w, b}
    clipped = [(tf.clip_by_value(g, -1.0, 1.0), v) for g, v in gvs]
    train_op = opt.apply_gradients(clipped)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g0 = sess.run(gvs[0][0], {x: xs, y: ys})
        sess.run(train_op, {x: xs, y: ys})
        w1 = sess.run(w)
    np.testing.assert_allclose(w1, -0.1 * np.clip(g0, -1, 1), rtol=1e-5)


def test_slots_and_global_step_collection():
    x, y, xs, ys, w, b, loss = _regression()
    opt = tf.train.AdamOptimizer()
    opt.minimize(loss)
    assert opt.get_slot(w, "m") is not None
    assert sorted(opt.get_slot_names()) == ["m", "v"]
    step = tf.train.get_or_create_global_step()
    assert tf.train.get_global_step() is step
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
    assert step.dtype == tf.int64


def test_decay_schedules():
    step = tf.train.get_or_create_global_step()
    set_step = tf.assign(step, tf.constant(250, tf.int64))
    exp = tf.train.exponential_decay(0.1, step, 100, 0.5, staircase=True)
    pw = tf.train.piecewise_constant(step, [100, 200], [1.0, 0.5, 0.1])
    poly = tf.train.polynomial_decay(1.0, step, 500, end_learning_rate=0.0)
    cos = tf.train.cosine_decay(1.0, step, 1000)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(set_step)
        r = sess.run([exp, pw, poly, cos])
    np.testing.assert_allclose(r, [0.1 * 0.25, 0.1, 0.5, 0.5 * (1 + np.cos(np.pi * 0.25))],
                               rtol=1e-6)


def test_inverse_time_and_natural_exp_decay():
    # TF 1.15: p = global_step / decay_steps (floored if staircase); 250 / 100 = 2.5.
    step = tf.train.get_or_create_global_step()
    set_step = tf.assign(step, tf.constant(250, tf.int64))
    inv = tf.train.inverse_time_decay(0.1, step, 100, 0.5)
    inv_stairs = tf.train.inverse_time_decay(0.1, step, 100, 0.5, staircase=True)
    nat = tf.train.natural_exp_decay(0.1, step, 100, 0.5)
    nat_stairs = tf.train.natural_exp_decay(0.1, step, 100, 0.5, staircase=True)
    assert inv.op.name == "InverseTimeDecay" and nat.op.name == "NaturalExpDecay"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(set_step)
        r = sess.run([inv, inv_stairs, nat, nat_stairs])
    np.testing.assert_allclose(r, [0.1 / 2.25, 0.1 / 2.0, 0.1 * np.exp(-1.25), 0.1 * np.exp(-1.0)],
                               rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="decay_steps must be positive"):
        tf.train.natural_exp_decay(0.1, step, 0, 0.5)


def test_saver_writes_checkpoint_and_meta_and_restores(tmp_path):
    v = tf.Variable([1.0, 2.0, 3.0], name="v")
    step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(v, [4.0, 5.0, 6.0]))
        path = saver.save(sess, prefix, global_step=7)
    assert path == prefix + "-7"
    assert os.path.exists(path + ".safetensors")
    assert os.path.exists(path + ".meta")
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(v), [4.0, 5.0, 6.0])
    # The .meta graph comes back in a fresh graph, and the checkpoint restores into it.
    tf.reset_default_graph()
    saver2 = tf.train.import_meta_graph(path + ".meta")
    v2 = tf.get_default_graph().get_tensor_by_name("v:0")
    with tf.Session() as sess:
        saver2.restore(sess, path)
        np.testing.assert_array_equal(sess.run(v2), [4.0, 5.0, 6.0])


def test_restore_of_a_missing_checkpoint_is_not_found(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError):
            saver.restore(sess, str(tmp_path / "nothing-1"))


def test_summaries_and_file_writer(tmp_path):
    x = tf.placeholder(tf.float32, [None])
    tf.summary.scalar("mean", tf.reduce_mean(x))
    tf.summary.histogram("values", x)
    tf.summary.image("img", tf.zeros([1, 4, 4, 1]))
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter(str(tmp_path), tf.get_default_graph())
    with tf.Session() as sess:
        for step in range(3):
            writer.add_summary(sess.run(merged, {x: [1.0, 2.0, 3.0]}), step)
    writer.close()
    files = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert len(files) == 1
    data = open(files[0], "rb").read()
    assert b"brain.Event:2" in data and b"mean" in data and b"values" in data
    assert tf.summary.merge_all("no_such_collection") is None
