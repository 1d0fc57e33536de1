"""tf.feature_column (the Estimator half, branch pyest)."""
