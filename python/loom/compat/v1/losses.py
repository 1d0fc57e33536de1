"""tf.losses (the Estimator half, branch pyest)."""
