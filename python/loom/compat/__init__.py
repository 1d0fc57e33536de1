"""Compatibility namespaces: loom.compat.v1 mirrors TensorFlow 1.x's Python API."""
