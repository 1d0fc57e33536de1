"""A TF1 training script for test_kill_resume.py: tf.data input (shuffled, repeated,
batched), dropout, Adam, MonitoredTrainingSession saving every 5 steps; prints the step
it starts from, and at the end saves the final variables and global step to out.npy.
argv: model_dir out.npy [seconds to sleep after each step]"""
import sys, time
import numpy as np
import loom.compat.v1 as tf

model_dir, out = sys.argv[1], sys.argv[2]
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
tf.set_random_seed(7)
rng = np.random.RandomState(0)
features = rng.uniform(-1, 1, (100, 4)).astype(np.float32)
labels = (features @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.1).astype(np.float32)
ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(32, seed=3).repeat().batch(8)
x, y = ds.make_one_shot_iterator().get_next()
h = tf.layers.dense(x, 8, activation=tf.nn.relu)
h = tf.nn.dropout(h, keep_prob=0.8)
pred = tf.layers.dense(h, 1)
loss = tf.losses.mean_squared_error(y, pred)
gs = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=gs)

class Slow(tf.train.SessionRunHook):
    def begin(self):
        self.step = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        print("start", session.run(self.step), flush=True)  # the step it resumed from

    def after_run(self, ctx, vals):
        if pause:
            time.sleep(pause)

with tf.train.MonitoredTrainingSession(checkpoint_dir=model_dir, save_checkpoint_steps=5,
                                       save_summaries_steps=None, log_step_count_steps=0,
                                       hooks=[tf.train.StopAtStepHook(last_step=60), Slow()]) as sess:
    while not sess.should_stop():
        sess.run(train_op)
with tf.Session() as s:
    tf.train.Saver().restore(s, tf.train.latest_checkpoint(model_dir))
    vals = s.run(tf.trainable_variables() + [gs])
np.save(out, np.concatenate([np.ravel(v) for v in vals]))
print("done", vals[-1])
