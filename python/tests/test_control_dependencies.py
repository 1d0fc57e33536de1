"""tf.control_dependencies honoured by every op built inside the block, whoever builds it:
the package's generated ops and the C++ builders behind layers, losses, metrics and the
optimizers (Graph::AddNode adds the block's ops, as TF1's Graph._create_op does). A
ported `with tf.control_dependencies([update_op]): loss = tf.losses...` must run
update_op whenever loss is evaluated."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")


def _counter():
    counter = tf.Variable(0.0, name="counter")
    return counter, tf.assign_add(counter, 1.0)


def _runs_of(fetch, counter, times=3):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(times):
            sess.run(fetch)
        return sess.run(counter)


def test_a_cpp_built_loss_runs_the_block_ops():
    counter, inc = _counter()
    labels = tf.constant([[1.0], [2.0]])
    preds = tf.constant([[0.0], [0.0]])
    with tf.control_dependencies([inc]):
        loss = tf.losses.mean_squared_error(labels, preds)
    assert _runs_of(loss, counter) == 3.0


def test_a_cpp_built_layer_runs_the_block_ops():
    counter, inc = _counter()
    x = tf.constant(np.ones((2, 3), np.float32))
    with tf.control_dependencies([inc]):
        y = tf.layers.dense(x, 1, kernel_initializer=tf.ones_initializer())
    assert _runs_of(y, counter) == 3.0


def test_a_cpp_built_metric_update_runs_the_block_ops():
    counter, inc = _counter()
    with tf.control_dependencies([inc]):
        _, update = tf.metrics.mean(tf.constant([1.0, 3.0]))
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        assert sess.run(counter) == 0.0  # the metric's initializers do not run inc
        sess.run(update)
        sess.run(update)
        assert sess.run(counter) == 2.0


def test_variables_and_slots_made_inside_the_block_do_not_depend_on_it():
    """TF1 builds variables, optimizer slots and the global step under init_scope: their
    initializers must not run the block's ops."""
    counter, inc = _counter()
    w = tf.Variable(1.0, name="w")
    with tf.control_dependencies([inc]):
        v = tf.Variable(2.0, name="v")
        train = tf.train.AdamOptimizer(0.1).minimize(
            w * w, global_step=tf.train.get_or_create_global_step())
    with tf.Session() as sess:
        sess.run(counter.initializer)
        sess.run([x.initializer for x in tf.global_variables() if x is not counter])
        assert sess.run(counter) == 0.0
        assert sess.run(v) == 2.0
        sess.run(train)
        assert sess.run(counter) == 1.0
        assert sess.run(tf.train.get_global_step()) == 1


def test_nested_blocks_none_and_tf1_edge_rules():
    a = tf.no_op(name="a")
    b = tf.no_op(name="b")
    with tf.control_dependencies([a]):
        x = tf.constant(1.0, name="x")
        with tf.control_dependencies([b]):
            y = tf.constant(2.0, name="y")
            # Dominated (TF1): y was built in both blocks, so y + 1 needs neither edge.
            z = tf.add(y, 1.0, name="z")
            with tf.control_dependencies(None):
                free = tf.constant(3.0, name="free")
        w = tf.identity(x, name="w")
    assert set(x.op.control_inputs) == {a}
    assert set(y.op.control_inputs) == {a, b}
    assert a not in z.op.control_inputs and b not in z.op.control_inputs
    assert free.op.control_inputs == []
    assert w.op.control_inputs == []  # x was built in the block: w already runs after a
    after = tf.constant(4.0)
    assert after.op.control_inputs == []


def test_a_data_input_is_not_also_a_control_input():
    counter, inc = _counter()
    with tf.control_dependencies([inc]):
        doubled = tf.multiply(inc, 2.0)
    assert inc.op not in doubled.op.control_inputs
    assert _runs_of(doubled, counter, times=2) == 2.0


def test_tensors_and_names_are_accepted_and_lists_are_not():
    c = tf.constant(1.0, name="c")
    with tf.control_dependencies([c, "c"]):
        d = tf.constant(2.0)
    assert d.op.control_inputs == [c.op]
    with pytest.raises(TypeError, match="flatten"):
        with tf.control_dependencies([[c]]):
            pass


def test_group_inside_a_block_runs_after_it():
    counter, inc = _counter()
    with tf.control_dependencies([inc]):
        g = tf.group(tf.no_op())
    assert inc.op in g.control_inputs
    assert _runs_of(g, counter, times=2) == 2.0


def test_the_update_ops_idiom_orders_the_update_after_the_block():
    """`with tf.control_dependencies(update_ops): train_op = opt.minimize(loss)`: the
    optimizer's update op itself (not only a group around it) waits for the block."""
    counter, inc = _counter()
    w = tf.Variable(1.0, name="w")
    with tf.control_dependencies([inc]):
        train = tf.train.GradientDescentOptimizer(0.5).minimize(w)
    # Every node of the update has a path from inc: a node built in the block that has no
    # data input from inside the block carries the control edge.
    assert inc.op in train.control_inputs or any(
        inc.op in t.op.control_inputs for t in train.inputs)
    assert _runs_of(train, counter, times=2) == 2.0
