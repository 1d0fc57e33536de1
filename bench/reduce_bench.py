#!/usr/bin/env python3
"""tf.reduce_max / tf.reduce_min / tf.argmax (Loom's Max, Min and ArgMax ops, which
propagate NaN as numpy does) against torch.amax / torch.amin / torch.argmax (the peer,
PyTorch, NaN-propagating too), side by side in one process on the same inputs: the tensor
is held in the graph as a variable (so a step is the op and Session.run, no feed
conversion). Both run on `threads` intra-op threads. Rounds alternate Loom and PyTorch so
both see the same machine load; the figure kept per case is the median over the rounds of
the per-round ratio Loom / PyTorch of the best step time of each side (what other
processes disturb least). Prints the CPU model and the load average beside each figure.

Usage (from the repository root, after `ninja -C build loom_python`):
  PYTHONPATH=build/python /usr/bin/python3 bench/reduce_bench.py [THREADS] [ROUNDS]"""
import statistics
import sys

import numpy as np
import torch

import loom.compat.v1 as tf
from python_bench import cpu_model, load  # the same header fields as the other Python bench
from topk_bench import best_of  # the same timing loop

# (op, shape, dtype, axis: None reduces every dim)
CASES = [
    ("reduce_max", (1 << 20,), np.float32, None),
    ("reduce_min", (1 << 20,), np.float32, None),
    ("reduce_max", (1 << 24,), np.float32, None),
    ("reduce_max", (1 << 20,), np.float64, None),
    ("reduce_max", (4096, 1000), np.float32, 1),
    ("reduce_max", (1000, 4096), np.float32, 0),
    ("argmax", (4096, 1000), np.float32, 1),
    ("argmax", (1000, 4096), np.float32, 0),
    ("argmax", (1 << 20,), np.float32, 0),
]


def ops(name, v, xt, axis):
    if name == "reduce_max":
        return tf.reduce_max(v, axis=axis), lambda: torch.amax(xt, dim=axis if axis is not None
                                                                    else tuple(range(xt.dim())))
    if name == "reduce_min":
        return tf.reduce_min(v, axis=axis), lambda: torch.amin(xt, dim=axis if axis is not None
                                                                    else tuple(range(xt.dim())))
    return tf.argmax(v, axis=axis), lambda: torch.argmax(xt, dim=axis)


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.set_num_threads(threads)
    print("cpu: %s; threads %d; rounds %d; torch %s" % (cpu_model(), threads, rounds,
                                                       torch.__version__))
    for name, shape, dtype, axis in CASES:
        x = np.random.RandomState(0).randn(*shape).astype(dtype)
        tf.reset_default_graph()
        v = tf.Variable(x)
        op, peer = ops(name, v, torch.from_numpy(x), axis)
        config = tf.ConfigProto(intra_op_parallelism_threads=threads)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(op), peer().numpy())
            loom_step = sess.make_callable(op)
            repeats = 5 if x.size >= (1 << 24) else 20
            ratios, loom_times, torch_times = [], [], []
            for _ in range(rounds):
                a = best_of(loom_step, repeats)
                b = best_of(peer, repeats)
                loom_times.append(a)
                torch_times.append(b)
                ratios.append(a / b)
        print("%s %s %s axis=%s: Loom %.1f us, PyTorch %.1f us, Loom / PyTorch %.2f "
              "(median of %d rounds; load %s)" % (
                  name, list(shape), np.dtype(dtype).name, axis,
                  1e6 * statistics.median(loom_times), 1e6 * statistics.median(torch_times),
                  statistics.median(ratios), rounds, load()))


if __name__ == "__main__":
    main()
