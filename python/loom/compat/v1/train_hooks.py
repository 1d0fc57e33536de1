"""tf.train's SessionRunHook, the built-in hooks, SessionRunArgs and
MonitoredTrainingSession (the Estimator half, branch pyest); train.py re-exports it."""
