"""tf.estimator (the Estimator half, branch pyest)."""
