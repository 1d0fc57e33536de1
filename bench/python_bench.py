#!/usr/bin/env python3
"""The Python front end's overhead: the softmax-regression step (batch 32, SGD) and the MLP
step (784-512-512-10, batch 256, Adam) driven from Python (loom.compat.v1, one
Session.run per step with numpy feeds) beside the same steps from C++ (bench/core_bench,
same graph, same feeds), in one run. Prints the CPU model and the load, one JSON line per
measurement, and per model the medians over the rounds.

Usage (from the repository root, after `ninja -C build core_bench loom_python`):
  PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [BUILD_DIR] [THREADS] [ROUNDS]

Each round runs C++ then Python, so both see the same machine load; the figures kept are
the medians over the rounds of each side and of each round's Python / C++ ratio and
Python - C++ difference (pairwise, so a round disturbed by the load moves both sides),
for three statistics of the same steps: the mean wall time per step, the fastest single
step (what other processes disturb least) and the process's CPU time per step (all
threads; on a loaded machine it excludes the time spent waiting for a core).
Within the Python process the step is timed four ways, alternating in blocks, to show
where the overhead goes:
  run        sess.run(train_op, feed_dict): the TF1 training loop (the headline figure);
             Session.run's cached native callable per (fetch, feed keys)
  callable   sess.make_callable(train_op, [x, labels])(x, labels): no feed_dict handling
  uncached   the binding's general run(feeds, fetches, targets) with the feed list built
             in Python per step (what Session.run did before the cache: the feed dict
             walk, the pybind11 argument conversions, the per-run error strings)
  fetch      sess.run([train_op, loss], feed_dict): the general path plus fetching the
             loss (the fetch structure mapping and the numpy scalar conversion)
  nothing    sess.run(no_op, feed_dict) with the same feeds, the no_op depending on both
             placeholders: a whole Python step around a graph that computes nothing
             (the Python and binding overhead, plus the C++ Session.Run of that graph:
             an upper bound of what Python adds to a step)
so run - callable is the feed_dict handling and the cache lookup, uncached - callable
what the cache saves, fetch - run the fetch mapping and conversion; callable - C++ is
what remains: the pybind11 call, converting two numpy arrays to borrowed Tensors, the
GIL release and reacquire around the run, and the Python loop itself. On a loaded
machine the difference of two processes' step times is noisier than `nothing` is."""
import json
import os
import platform
import statistics
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


def load():
    return " ".join("%.2f" % v for v in os.getloadavg())


def dense(x, units, relu, seed):
    with tf.variable_scope(None, default_name="dense"):
        fan_in = x.shape.as_list()[-1]
        limit = np.sqrt(6.0 / (fan_in + units))
        w = tf.Variable(tf.random_uniform([fan_in, units], -limit, limit, seed=seed), name="kernel")
        b = tf.Variable(tf.zeros([units]), name="bias")
        y = tf.nn.bias_add(tf.matmul(x, w), b)
        return tf.nn.relu(y) if relu else y


VARIANTS = ("run", "callable", "uncached", "fetch", "nothing")


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
    with tf.control_dependencies([tf.identity(x), tf.identity(labels)]):
        nothing = tf.no_op()  # a run that computes nothing: the overhead alone
    tf.get_default_graph().finalize()
    rng = np.random.RandomState(5)
    xs = rng.randn(batch, 784).astype(np.float32)
    ys = rng.randint(0, 10, batch).astype(np.int64)
    feed = {x: xs, labels: ys}
    sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=threads))
    sess.run(init)
    step = sess.make_callable(train_op, [x, labels])
    native, node = sess._native, train_op._node
    fetches = [train_op, loss]

    def uncached():
        native.run(sess._feeds(feed), [], [node])

    fns = {
        "run": lambda: sess.run(train_op, feed),
        "callable": lambda: step(xs, ys),
        "uncached": uncached,
        "fetch": lambda: sess.run(fetches, feed),
        "nothing": lambda: sess.run(nothing, feed),
    }
    clock, cpu_clock = time.perf_counter, time.process_time

    def timed(fn, n):
        """(wall seconds, fastest step, process CPU seconds) of n steps, each timed, as
        core_bench times them."""
        best, total = 1e30, 0.0
        cpu = cpu_clock()
        for _ in range(n):
            t0 = clock()
            fn()
            t = clock() - t0
            total += t
            if t < best:
                best = t
        return total, best, cpu_clock() - cpu

    for name in VARIANTS:
        timed(fns[name], max(5, steps // 20))  # buffers and plans warm
    # Alternate the variants in blocks so that a burst of load hits all of them.
    blocks = 4
    wall, best, cpu = (dict.fromkeys(VARIANTS, 0.0) for _ in range(3))
    for name in VARIANTS:
        best[name] = 1e30
    for _ in range(blocks):
        for name in VARIANTS:
            w, b, c = timed(fns[name], steps // blocks)
            wall[name] += w
            best[name] = min(best[name], b)
            cpu[name] += c
    n = blocks * (steps // blocks)
    result = {"peer": "python", "model": model, "threads": threads, "steps": n}
    for name in VARIANTS:
        result["ms_per_step_" + name] = 1000 * wall[name] / n
        result["min_ms_per_step_" + name] = 1000 * best[name]
        result["cpu_ms_per_step_" + name] = 1000 * cpu[name] / n
    result["ms_per_step"] = result["ms_per_step_run"]
    result["min_ms_per_step"] = result["min_ms_per_step_run"]
    result["cpu_ms_per_step"] = result["cpu_ms_per_step_run"]
    result["steps_per_sec"] = 1000 / result["ms_per_step"]
    return result


def cpp_step(build, model, threads, steps):
    out = subprocess.run([os.path.join(build, "bench", "core_bench"), model, str(threads),
                          str(steps)], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    print("cpu:", cpu_model(), "| cores:", os.cpu_count(), "| load average:", load())
    steps = {"softreg": 4000, "mlp": 60}
    for model in ("softreg", "mlp"):
        cpp, py = [], []
        for _ in range(rounds):
            c = cpp_step(build, model, threads, steps[model])
            print(json.dumps(c))
            p = python_step(model, threads, steps[model])
            print(json.dumps(p))
            cpp.append(c)
            py.append(p)
        med = statistics.median
        print("%s, %d thread(s), %d rounds, load %s" % (model, threads, rounds, load()))
        for stat, key in (("mean wall", "ms_per_step"), ("fastest step", "min_ms_per_step"),
                          ("CPU time", "cpu_ms_per_step")):
            cv = [c[key] for c in cpp]
            line = "  %-12s C++ %.4f ms" % (stat, med(cv))
            for name in VARIANTS:
                pv = [p[key + "_" + name] for p in py]
                line += "; %s %.4f (x%.3f, %+.1f us)" % (
                    name, med(pv), med(a / b for a, b in zip(pv, cv)),
                    med(1000 * (a - b) for a, b in zip(pv, cv)))
            print(line)
        pv, cv = [p["ms_per_step"] for p in py], [c["ms_per_step"] for c in cpp]
        print("%s: sess.run(train_op, feed_dict) / C++ (mean wall, median of rounds) = %.3f, "
              "overhead %.1f us/step" % (model, med(a / b for a, b in zip(pv, cv)),
                                         med(1000 * (a - b) for a, b in zip(pv, cv))))

if __name__ == "__main__":
    main()
