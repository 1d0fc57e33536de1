"""Fixtures the Python tests share. A test module that builds graphs in the default graph
starts each test on a fresh one with

    pytestmark = pytest.mark.usefixtures("fresh_graph")
"""
import numpy as np
import pytest

import loom.compat.v1 as tf


@pytest.fixture
def fresh_graph():
    """A new default graph for the test (tf.reset_default_graph before it)."""
    tf.reset_default_graph()
    yield


@pytest.fixture
def model_dir(tmp_path):
    """A temporary Estimator model_dir, as a string (TF's RunConfig takes a path string)."""
    return str(tmp_path)


@pytest.fixture
def numeric_gradient():
    """central_differences(sess, y, x, x0): d y / d x at x0 (y a scalar tensor, x a
    placeholder), by (y(x0 + h) - y(x0 - h)) / 2h per element with h = 1e-6, to check
    tf.gradients of Python composites in float64."""

    def central_differences(sess, y, x, x0, h=1e-6):
        grad = np.zeros_like(x0)
        for i in np.ndindex(*x0.shape):
            up, down = x0.copy(), x0.copy()
            up[i] += h
            down[i] -= h
            grad[i] = (sess.run(y, {x: up}) - sess.run(y, {x: down})) / (2 * h)
        return grad

    return central_differences
