#!/usr/bin/env python3
"""tf.nn.top_k (Loom's TopKV2 op) against torch.topk (the peer, PyTorch), side by side in
one process, on the same float32 inputs: a [rows, columns] matrix held in the graph as a
variable (so a step is the op and Session.run, no feed conversion), k along the last
dimension. Both run on `threads` intra-op threads. Rounds alternate Loom and PyTorch so
both see the same machine load; the figure kept per shape is the median over the rounds
of the per-round ratio Loom / PyTorch of the best step time of each side (what other
processes disturb least). Prints the CPU model and the load average beside each figure.

Usage (from the repository root, after `ninja -C build loom_python`):
  PYTHONPATH=build/python /usr/bin/python3 bench/topk_bench.py [THREADS] [ROUNDS]"""
import os
import statistics
import sys
import time

import numpy as np
import torch

import loom.compat.v1 as tf
from python_bench import cpu_model, load  # the same header fields as the other Python bench

SHAPES = [(256, 1000, 5), (4096, 1000, 5), (256, 30000, 10), (64, 1000, 500)]




def best_of(step, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.set_num_threads(threads)
    print("cpu: %s; threads %d; rounds %d; torch %s" % (cpu_model(), threads, rounds,
                                                       torch.__version__))
    for rows, columns, k in SHAPES:
        x = np.random.RandomState(0).randn(rows, columns).astype(np.float32)
        tf.reset_default_graph()
        v = tf.Variable(x)
        top = tf.nn.top_k(v, k)
        xt = torch.from_numpy(x)
        config = tf.ConfigProto(intra_op_parallelism_threads=threads)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(top)
            want = torch.topk(xt, k)
            # Distinct random values: the same selection, in the same order.
            np.testing.assert_array_equal(got.indices, want.indices.numpy())
            loom_step = sess.make_callable(top.values)
            ratios, loom_times, torch_times = [], [], []
            for _ in range(rounds):
                a = best_of(loom_step, 20)
                b = best_of(lambda: torch.topk(xt, k), 20)
                loom_times.append(a)
                torch_times.append(b)
                ratios.append(a / b)
        print("top_k [%d, %d] k=%d: Loom %.1f us, PyTorch %.1f us, Loom / PyTorch %.2f "
              "(median of %d rounds; load %s)" % (
                  rows, columns, k, 1e6 * statistics.median(loom_times),
                  1e6 * statistics.median(torch_times), statistics.median(ratios), rounds,
                  load()))


if __name__ == "__main__":
    main()
