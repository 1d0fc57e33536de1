"""SessionRunHook subclassed in Python, the built-in hooks by tensor name, and
MonitoredTrainingSession: the lifecycle order, fetches and feeds through SessionRunArgs,
stop requests, and exceptions raised in hooks."""
import os

import numpy as np
import pytest

import loom.compat.v1 as tf


class RecordingHook(tf.train.SessionRunHook):
    """Records every call; fetches the global step as a nested structure."""

    def __init__(self):  # no super().__init__(), as much TF1 code does
        self.calls = []
        self.steps = []

    def begin(self):
        self.calls.append("begin")
        self.global_step = tf.train.get_global_step()
        assert self.global_step is not None

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")
        self.start = session.run(self.global_step)

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs({"step": [self.global_step]})

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.steps.append(int(run_values.results["step"][0]))

    def end(self, session):
        self.calls.append("end")


def _linear_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 1], name="x")
        w = tf.Variable(tf.zeros([1, 1]), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 2.0 * x), name="loss")
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return graph, x, loss, train_op


def test_hook_lifecycle_order_and_fetches(tmp_path):
    graph, x, loss, train_op = _linear_graph()
    hook = RecordingHook()
    with graph.as_default():
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path),
                hooks=[hook, tf.train.StopAtStepHook(last_step=3)]) as sess:
            while not sess.should_stop():
                sess.run(train_op, feed_dict={x: np.ones((4, 1))})
    assert hook.calls == (["begin", "after_create_session"] +
                          ["before_run", "after_run"] * 3 + ["end"])
    assert hook.start == 0
    # The hook's fetch runs in the same Session.run as the train op.
    assert hook.steps == [1, 2, 3]
    assert any(name.startswith("model.ckpt-3") for name in os.listdir(tmp_path))


class FeedingStopper(tf.train.SessionRunHook):
    """Feeds the placeholder itself and stops after two steps."""

    def __init__(self, x):
        self.x = x
        self.losses = []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(fetches="loss:0",
                                       feed_dict={self.x: np.full((2, 1), 3.0)})

    def after_run(self, run_context, run_values):
        self.losses.append(run_values.results)
        if len(self.losses) == 2:
            run_context.request_stop()


def test_feed_dict_from_a_hook_and_request_stop():
    graph, x, loss, train_op = _linear_graph()
    hook = FeedingStopper(x)
    steps = 0
    with graph.as_default():
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            while not sess.should_stop():
                sess.run(train_op)
                steps += 1
    assert steps == 2
    # loss = mean((w x - 2x)^2) with w = 0 and x = 3: 36, then smaller.
    assert hook.losses[0] == pytest.approx(36.0)
    assert hook.losses[1] < hook.losses[0]


class Boom(Exception):
    pass


class FailingHook(tf.train.SessionRunHook):
    def __init__(self):
        self.ended = False

    def after_run(self, run_context, run_values):
        raise Boom("hook failed at a step, message intact")

    def end(self, session):
        self.ended = True


def test_exception_in_a_hook_arrives_as_itself_and_end_does_not_run():
    graph, x, loss, train_op = _linear_graph()
    hook = FailingHook()
    with graph.as_default():
        sess = tf.train.MonitoredTrainingSession(hooks=[hook])
        with pytest.raises(Boom, match="hook failed at a step, message intact"):
            sess.run(train_op, feed_dict={x: np.ones((1, 1))})
    assert not hook.ended


def test_logging_tensor_hook_by_name():
    graph, x, loss, train_op = _linear_graph()
    seen = []
    with graph.as_default():
        tf.nn.softmax(tf.matmul(x, tf.ones([1, 3])), name="softmax_tensor")
        hook = tf.train.LoggingTensorHook({"probabilities": "softmax_tensor", "loss": loss},
                                          every_n_iter=1, formatter=lambda v: seen.append(v) or "")
        with tf.train.MonitoredTrainingSession(
                hooks=[hook, tf.train.StopAtStepHook(num_steps=2)]) as sess:
            while not sess.should_stop():
                sess.run(train_op, feed_dict={x: np.ones((2, 1))})
    assert len(seen) == 2
    assert seen[0]["probabilities"].shape == (2, 3)
    np.testing.assert_allclose(seen[0]["probabilities"], np.full((2, 3), 1.0 / 3), rtol=1e-6)
    assert seen[0]["loss"] == pytest.approx(4.0)


def test_logging_tensor_hook_unknown_name_is_not_found():
    graph, x, loss, train_op = _linear_graph()
    with graph.as_default():
        hook = tf.train.LoggingTensorHook({"p": "no_such_tensor"}, every_n_iter=1)
        with pytest.raises(tf.errors.NotFoundError, match="no_such_tensor"):
            tf.train.MonitoredTrainingSession(hooks=[hook])


def test_final_ops_hook_and_step_counter(tmp_path):
    graph, x, loss, train_op = _linear_graph()
    with graph.as_default():
        final = tf.train.FinalOpsHook({"step": tf.train.get_global_step()})
        counter = tf.train.StepCounterHook(every_n_steps=1, output_dir=str(tmp_path))
        with tf.train.MonitoredTrainingSession(
                hooks=[final, counter, tf.train.StopAtStepHook(last_step=4)]) as sess:
            while not sess.should_stop():
                sess.run(train_op, feed_dict={x: np.ones((1, 1))})
    assert int(final.final_ops_values["step"]) == 4
    assert any(n.startswith("events.out.tfevents") for n in os.listdir(tmp_path))


def test_hook_argument_errors():
    with pytest.raises(ValueError):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError):
        tf.train.LoggingTensorHook({"a": "a"})
    with pytest.raises(TypeError, match="SessionRunHook"):
        tf.train.MonitoredTrainingSession(hooks=[object()])


def test_nan_loss_arrives_as_a_tf_error_and_singular_session_runs():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [])
        loss = tf.log(x)  # log(-1) = NaN
        tf.train.get_or_create_global_step()
        with tf.train.SingularMonitoredSession(hooks=[tf.train.NanTensorHook(loss)]) as sess:
            assert sess.run(loss, feed_dict={x: 1.0}) == 0.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="NaN"):
                sess.run(loss, feed_dict={x: -1.0})
