"""tf.layers (the Estimator half, branch pyest)."""
