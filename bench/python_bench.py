#!/usr/bin/env python3
"""The Python front end's overhead: the softmax-regression step (batch 32, SGD) and the MLP
step (784-512-512-10, batch 256, Adam) driven from Python (loom.compat.v1, one
Session.run per step with numpy feeds) beside the same steps from C++ (bench/core_bench,
same graph, same feeds), in one run. Prints the CPU model, one JSON line per measurement
and the ratios.

Usage (from the repository root, after `ninja -C build core_bench loom_python`):
  PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [BUILD_DIR] [THREADS] [ROUNDS]
Rounds alternate C++ and Python so both see the same machine load; the figure kept for
each is the best round (the least disturbed by other processes)."""
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

import loom.compat.v1 as tf


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def dense(x, units, relu, seed):
    with tf.variable_scope(None, default_name="dense"):
        fan_in = x.shape.as_list()[-1]
        limit = np.sqrt(6.0 / (fan_in + units))
        w = tf.Variable(tf.random_uniform([fan_in, units], -limit, limit, seed=seed), name="kernel")
        b = tf.Variable(tf.zeros([units]), name="bias")
        y = tf.nn.bias_add(tf.matmul(x, w), b)
        return tf.nn.relu(y) if relu else y


def python_step(model, threads, steps):
    tf.reset_default_graph()
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    if model == "mlp":
        batch = 256
        logits = dense(dense(dense(x, 512, True, 1), 512, True, 1), 10, False, 1)
    else:
        batch = 32
        logits = dense(x, 10, False, 1)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    opt = tf.train.GradientDescentOptimizer(0.1) if model == "softreg" else \
        tf.train.AdamOptimizer(1e-3)
    train_op = opt.minimize(loss)
    init = tf.global_variables_initializer()
    tf.get_default_graph().finalize()
    rng = np.random.RandomState(5)
    feed = {x: rng.randn(batch, 784).astype(np.float32),
            labels: rng.randint(0, 10, batch).astype(np.int64)}
    sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=threads))
    sess.run(init)
    for _ in range(max(5, steps // 10)):
        sess.run(train_op, feed)
    start = time.perf_counter()
    for _ in range(steps):
        sess.run(train_op, feed)
    secs = time.perf_counter() - start
    return {"peer": "python", "model": model, "threads": threads,
            "steps_per_sec": steps / secs, "ms_per_step": 1000 * secs / steps}


def cpp_step(build, model, threads, steps):
    out = subprocess.run([os.path.join(build, "bench", "core_bench"), model, str(threads),
                          str(steps)], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    print("cpu:", cpu_model(), "| cores:", os.cpu_count(), "| load average:",
          " ".join("%.2f" % v for v in os.getloadavg()))
    steps = {"softreg": 3000, "mlp": 60}
    for model in ("softreg", "mlp"):
        best = {}
        for _ in range(rounds):
            for peer, fn in (("cpp", lambda: cpp_step(build, model, threads, steps[model])),
                             ("python", lambda: python_step(model, threads, steps[model]))):
                r = fn()
                print(json.dumps(r))
                if peer not in best or r["ms_per_step"] < best[peer]["ms_per_step"]:
                    best[peer] = r
        c, p = best["cpp"]["ms_per_step"], best["python"]["ms_per_step"]
        print("%s: C++ %.4f ms/step, Python %.4f ms/step: Python/C++ = %.3f, overhead %.1f us/step"
              % (model, c, p, p / c, 1000 * (p - c)))


if __name__ == "__main__":
    main()
