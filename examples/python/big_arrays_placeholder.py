"""The "GraphDef cannot be larger than 2GB" scenario as TF1 users wrote its workaround,
with only the import line changed: numpy arrays, Dataset.from_tensor_slices over
placeholders, make_initializable_iterator, a hook that runs the initializer with the
arrays in after_create_session, and an Estimator with a StepCounterHook and a summary
writer. In Loom the graph never holds the data: the fed arrays are viewed, not copied,
so peak RSS stays near the data's size, and no file but the checkpoints is large.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/big_arrays_placeholder.py \
      --gib 0.01 --steps 50                       # the suite's size
  ... --gib 2.5 --steps 200 --check-rss 1.1       # the full scenario (the `slow` test)

Exits non-zero when a non-checkpoint file exceeds 1 MiB, or (with --check-rss R) when
peak RSS exceeds R times the data."""
import argparse
import os
import resource
import shutil
import sys

import numpy as np
import loom.compat.v1 as tf

FEATURES = 256


class IteratorInitializerHook(tf.train.SessionRunHook):
    """Runs the iterator's initializer, feeding the arrays, once the session exists."""

    def __init__(self):
        super(IteratorInitializerHook, self).__init__()
        self.iterator_initializer_func = None

    def after_create_session(self, session, coord):
        self.iterator_initializer_func(session)


def get_inputs(features, labels, batch_size):
    iterator_initializer_hook = IteratorInitializerHook()

    def input_fn():
        x_placeholder = tf.placeholder(features.dtype, features.shape)
        y_placeholder = tf.placeholder(labels.dtype, labels.shape)
        dataset = tf.data.Dataset.from_tensor_slices((x_placeholder, y_placeholder))
        dataset = dataset.shuffle(buffer_size=10000).repeat().batch(batch_size)
        iterator = dataset.make_initializable_iterator()
        next_x, next_y = iterator.get_next()
        iterator_initializer_hook.iterator_initializer_func = lambda sess: sess.run(
            iterator.initializer, feed_dict={x_placeholder: features, y_placeholder: labels})
        return {"x": next_x}, next_y

    return input_fn, iterator_initializer_hook


def model_fn(features, labels, mode):
    predictions = tf.layers.dense(features["x"], 1)
    loss = tf.losses.mean_squared_error(labels, predictions)
    tf.summary.scalar("mse", loss)
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make_data(gib, seed=0):
    rows = int(gib * (1 << 30) / (FEATURES * 4))
    features = np.empty((rows, FEATURES), dtype=np.float32)
    rng = np.random.RandomState(seed)
    chunk = 1 << 16  # filled in chunks: no float64 temporary of the whole array
    for start in range(0, rows, chunk):
        stop = min(rows, start + chunk)
        features[start:stop] = rng.uniform(-1, 1, size=(stop - start, FEATURES))
    labels = features[:, :8].mean(axis=1, keepdims=True)  # y = mean of the first 8
    return features, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=0.01)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--model-dir", default="/tmp/loom_py_big_arrays")
    parser.add_argument("--check-rss", type=float, default=None)
    args = parser.parse_args()

    shutil.rmtree(args.model_dir, ignore_errors=True)
    features, labels = make_data(args.gib)
    data_bytes = features.nbytes + labels.nbytes

    input_fn, init_hook = get_inputs(features, labels, batch_size=256)
    writer = tf.summary.FileWriter(args.model_dir)
    step_counter = tf.train.StepCounterHook(every_n_steps=25, summary_writer=writer)
    estimator = tf.estimator.Estimator(model_fn, model_dir=args.model_dir,
                                       config=tf.estimator.RunConfig(save_summary_steps=25))
    estimator.train(input_fn, hooks=[init_hook, step_counter], steps=args.steps)
    writer.close()

    ok = True
    for root, _, names in os.walk(args.model_dir):
        for name in names:
            path = os.path.join(root, name)
            size = os.path.getsize(path)
            checkpoint = ".safetensors" in name
            print("  %-60s %12d bytes%s" % (os.path.relpath(path, args.model_dir), size,
                                            " (checkpoint)" if checkpoint else ""))
            if not checkpoint and size > (1 << 20):
                print("FAIL: %s is over 1 MiB" % path)
                ok = False
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0
    print("data %.3f GiB, peak RSS %.3f GiB (%.2fx data)" %
          (data_bytes / 2.0**30, rss / 2.0**30, rss / data_bytes))
    if args.check_rss is not None and rss > args.check_rss * data_bytes:
        print("FAIL: peak RSS is over %.2fx the data" % args.check_rss)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
