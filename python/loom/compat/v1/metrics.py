"""tf.metrics (the Estimator half, branch pyest)."""
