"""tf.einsum over Loom's ops (python/loom/compat/v1/_einsum.py): the forms TF1 programs
write, checked against values worked out by hand and against numpy.einsum (the same
documented semantics), with gradients against central differences; the rest is an error
naming the equation."""
import numpy as np
import pytest

import loom.compat.v1 as tf


pytestmark = pytest.mark.usefixtures("fresh_graph")

A = np.array([[1., 2., 3.], [4., 5., 6.]])
B = np.array([[1., 0.], [0., 1.], [2., 3.]])


def test_matrix_forms_by_hand():
    a, b = tf.constant(A), tf.constant(B)
    with tf.Session() as sess:
        # [[1 + 6, 2 + 9], [4 + 12, 5 + 18]]
        np.testing.assert_array_equal(sess.run(tf.einsum("ij,jk->ik", a, b)), [[7., 11.], [16., 23.]])
        np.testing.assert_array_equal(sess.run(tf.einsum("ij,jk", a, b)), [[7., 11.], [16., 23.]])
        np.testing.assert_array_equal(sess.run(tf.einsum("ij->ji", a)), A.T)
        np.testing.assert_array_equal(sess.run(tf.einsum("ij->j", a)), [5., 7., 9.])
        np.testing.assert_array_equal(sess.run(tf.einsum("ij->", a)), 21.)
        np.testing.assert_array_equal(sess.run(tf.linalg.einsum("i,i->", a[0], a[1])), 32.)
        np.testing.assert_array_equal(sess.run(tf.einsum("i,j->ij", a[0], b[2])),
                                      [[2., 3.], [4., 6.], [6., 9.]])
        np.testing.assert_array_equal(sess.run(tf.einsum("ij,ij->i", a, a)), [14., 77.])
        sq = tf.constant([[1., 2.], [3., 4.]])
        np.testing.assert_array_equal(sess.run(tf.einsum("ii->", sq)), 5.)
        np.testing.assert_array_equal(sess.run(tf.einsum("ii", sq)), 5.)
        np.testing.assert_array_equal(sess.run(tf.einsum("ii->i", sq)), [1., 4.])


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(4, 2, 3), (4, 3, 5)]),
    ("bij,bkj->bki", [(4, 2, 3), (4, 5, 3)]),
    ("...ij,...jk->...ik", [(2, 4, 2, 3), (2, 4, 3, 5)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bi,ij->bj", [(3, 4), (4, 2)]),
    ("ijk,jl->ilk", [(2, 3, 4), (3, 5)]),
])
def test_batched_and_chained_forms_match_numpy(equation, shapes):
    rng = np.random.RandomState(0)
    values = [rng.randn(*s) for s in shapes]
    with tf.Session() as sess:
        got = sess.run(tf.einsum(equation, *[tf.constant(v) for v in values]))
    np.testing.assert_allclose(got, np.einsum(equation, *values), rtol=1e-12, atol=1e-12)


def test_unknown_batch_dim_keeps_the_known_dims():
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.constant(np.ones((3, 5), np.float32))
    y = tf.einsum("bi,ij->bj", x, w)
    assert y.shape.as_list() == [None, 5]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((2, 3))}), np.full((2, 5), 3.))


def test_gradients_match_central_differences(numeric_gradient):
    x = tf.placeholder(tf.float64, [2, 3, 4])
    w = tf.constant(np.random.RandomState(1).randn(3, 5))
    r = tf.constant(np.random.RandomState(2).randn(2, 5, 4))
    loss = tf.reduce_sum(tf.einsum("bjk,jl->blk", x, w) * r) + tf.einsum("bii->", x[:, :, :3])
    (dx,) = tf.gradients(loss, x)
    x0 = np.random.RandomState(3).randn(2, 3, 4)
    with tf.Session() as sess:
        got = sess.run(dx, {x: x0})
        want = numeric_gradient(sess, loss, x, x0)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_unsupported_equations_name_themselves():
    a, b = tf.constant(A), tf.constant(B)
    with pytest.raises(ValueError, match=r"einsum\('ij,jk->iz'\): output label 'z'"):
        tf.einsum("ij,jk->iz", a, b)
    with pytest.raises(ValueError, match="repeats a label"):
        tf.einsum("ij,jk->ii", a, b)
    with pytest.raises(ValueError, match=r"label .j. has dims 3 and 2 \(only a dim of 1"):
        tf.einsum("ij,jk->ik", a, tf.constant(A.T[:2]))
    with pytest.raises(ValueError, match="2 operand label group"):
        tf.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="invalid label"):
        tf.einsum("i1,jk->ik", a, b)
    with pytest.raises(NotImplementedError, match=r"einsum\('ii->i'\): the diagonal"):
        tf.einsum("ii->i", tf.placeholder(tf.float32, [None, None]))
    with pytest.raises(TypeError, match="float32 or float64"):
        tf.einsum("ij->ji", tf.constant([[1, 2]]))


@pytest.mark.parametrize("equation,shapes", [
    ("ij,ij->ij", [(2, 1), (2, 3)]),        # kept label broadcast
    ("ij,jk->ik", [(2, 1), (4, 3)]),        # contracted label of size 1 on one side
    ("bij,bjk->bik", [(1, 2, 3), (4, 3, 5)]),  # batch label broadcast
    ("i,i->", [(1,), (5,)]),
    ("...ij,...jk->...ik", [(1, 2, 3), (6, 3, 2)]),
])
def test_size_one_dims_broadcast_as_numpy(equation, shapes, numeric_gradient):
    rng = np.random.RandomState(len(equation))
    values = [rng.uniform(-1, 1, s) for s in shapes]
    y = tf.einsum(equation, *[tf.constant(v) for v in values])
    x = tf.placeholder(tf.float64, shapes[0])
    loss = tf.reduce_sum(tf.square(tf.einsum(equation, x, tf.constant(values[1]))))
    (dx,) = tf.gradients(loss, x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), np.einsum(equation, *values), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(sess.run(dx, {x: values[0]}),
                                   numeric_gradient(sess, loss, x, values[0]), atol=1e-6)
