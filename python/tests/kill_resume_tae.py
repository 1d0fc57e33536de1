"""A TF1 train_and_evaluate program for test_kill_resume.py's second test: an Estimator
with its own model_fn (dropout, Adam), tf.data input (shuffled, repeated), a checkpoint
every 5 steps with an evaluation and two exports (LatestExporter, BestExporter) after
each; optional pauses in training and evaluation give a kill time to land mid-step,
mid-evaluation or mid-export. At the end it saves the final variables and global step to
out.npy.
argv: model_dir out.npy [seconds to sleep after each training step] [... each eval step]"""
import sys
import time

import numpy as np

import loom.compat.v1 as tf

model_dir, out = sys.argv[1], sys.argv[2]
train_pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
eval_pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
LAST_STEP = 40

rng = np.random.RandomState(0)
features = rng.uniform(-1, 1, (96, 4)).astype(np.float32)
labels = (features @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) > 0).astype(np.int32)


def model_fn(features, labels, mode):
    h = tf.layers.dense(features["x"], 8, activation=tf.nn.relu)
    h = tf.layers.dropout(h, rate=0.2, training=mode == tf.estimator.ModeKeys.TRAIN)
    logits = tf.layers.dense(h, 2)
    classes = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"classes": classes})
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op,
        eval_metric_ops={"accuracy": tf.metrics.accuracy(labels, classes)})


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": features}, labels)) \
        .shuffle(32, seed=3).repeat().batch(8)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": features}, labels)).batch(16)


def serving_input_receiver_fn():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


class Pause(tf.train.SessionRunHook):
    def __init__(self, seconds, say=None):
        self._seconds, self._say = seconds, say

    def after_create_session(self, session, coord):
        if self._say:
            print(self._say, session.run(tf.train.get_global_step()), flush=True)

    def after_run(self, run_context, run_values):
        if self._seconds:
            time.sleep(self._seconds)


config = tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=7,
                                save_checkpoints_steps=5, save_summary_steps=1000,
                                log_step_count_steps=1000, keep_checkpoint_max=3)
estimator = tf.estimator.Estimator(model_fn, config=config)
train_spec = tf.estimator.TrainSpec(train_input_fn, max_steps=LAST_STEP,
                                    hooks=[Pause(train_pause, "start")])
eval_spec = tf.estimator.EvalSpec(
    eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0.001,
    hooks=[Pause(eval_pause)],
    exporters=[tf.estimator.LatestExporter("latest", serving_input_receiver_fn,
                                           exports_to_keep=2),
               tf.estimator.BestExporter("best", serving_input_receiver_fn,
                                         exports_to_keep=2)])
result, exports = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
names = estimator.get_variable_names()  # weights, Adam slots, global_step
np.save(out, np.concatenate([np.ravel(estimator.get_variable_value(n)).astype(np.float64)
                             for n in sorted(names)]))
print("done", result["global_step"], result["loss"], flush=True)
