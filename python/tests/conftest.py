"""Fixtures the Python tests share. A test module that builds graphs in the default graph
starts each test on a fresh one with

    pytestmark = pytest.mark.usefixtures("fresh_graph")
"""
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
