"""tf.nn.dynamic_rnn's cost over T steps (a TensorArray-style collection of the outputs and
the While's per-iteration record), beside PyTorch's nn.LSTM, one process per run so that
peak RSS is the run's own.

  PYTHONPATH=build/python /usr/bin/python3 bench/rnn_collect_bench.py [T...] [--steps N]
      [--threads K] [--only before,loom,torch] [--before DIR] [--rounds R]

--before DIR adds a run of another Loom build (its python directory, e.g. main's
build/python) before each of this one's, for an A/B in the same script; --rounds R repeats
the whole sequence R times, alternating.

Per T and framework: the median seconds of one training step (forward, backward, SGD
update) over N steps after one warm-up step, the peak RSS of the process (ru_maxrss) and
its growth over the RSS after the graph / model was built (so the record and the
collection, not the library's size). Batch 32, input depth 128, LSTM hidden 128, float32.
"""
import json
import os
import resource
import subprocess
import sys
import time

BATCH, DEPTH, HIDDEN = 32, 128, 128


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2.0 ** 20


def run_loom(t_steps, steps, threads):
    import numpy as np
    import loom.compat.v1 as tf
    rng = np.random.RandomState(0)
    data = rng.uniform(-1, 1, (BATCH, t_steps, DEPTH)).astype(np.float32)
    x = tf.placeholder(tf.float32, [BATCH, t_steps, DEPTH])
    cell = tf.nn.rnn_cell.BasicLSTMCell(HIDDEN)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(outputs))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    config = tf.ConfigProto(intra_op_parallelism_threads=threads)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        base = current_rss_mib()
        sess.run(train, {x: data})
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            sess.run(train, {x: data})
            times.append(time.perf_counter() - start)
    return times, base


def run_torch(t_steps, steps, threads):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(DEPTH, HIDDEN)
    opt = torch.optim.SGD(lstm.parameters(), lr=0.01)
    data = torch.rand(t_steps, BATCH, DEPTH) * 2 - 1
    base = current_rss_mib()

    def step():
        opt.zero_grad()
        out, _ = lstm(data)
        loss = (out * out).mean()
        loss.backward()
        opt.step()
    step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times, base


def child(framework, t_steps, steps, threads):
    fn = run_loom if framework == "loom" else run_torch
    times, base = fn(t_steps, steps, threads)
    times.sort()
    print(json.dumps({"framework": framework, "T": t_steps, "median_s": times[len(times) // 2],
                      "min_s": times[0], "peak_rss_mib": rss_mib(),
                      "growth_mib": rss_mib() - base}))


def main():
    args = sys.argv[1:]
    if args and args[0] == "--child":
        child(args[1], int(args[2]), int(args[3]), int(args[4]))
        return
    steps, threads, only, lengths, before, rounds = 3, 2, None, [], None, 1
    i = 0
    while i < len(args):
        if args[i] == "--steps":
            steps, i = int(args[i + 1]), i + 2
        elif args[i] == "--threads":
            threads, i = int(args[i + 1]), i + 2
        elif args[i] == "--only":
            only, i = args[i + 1], i + 2
        elif args[i] == "--before":
            before, i = args[i + 1], i + 2
        elif args[i] == "--rounds":
            rounds, i = int(args[i + 1]), i + 2
        else:
            lengths.append(int(args[i]))
            i += 1
    lengths = lengths or [100, 400, 1000]
    print("load:", open("/proc/loadavg").read().strip())
    print("%-6s %6s %10s %10s %12s %10s" % ("", "T", "median s", "min s", "peak MiB",
                                           "growth MiB"))
    frameworks = (["before"] if before else []) + ["loom", "torch"]
    for _ in range(rounds):
        for t_steps in lengths:
            for framework in frameworks:  # side by side, one after the other
                if only and framework not in only.split(","):
                    continue
                env = dict(os.environ)
                if framework == "before":
                    env["PYTHONPATH"] = before
                out = subprocess.run([sys.executable, __file__, "--child",
                                      "torch" if framework == "torch" else "loom", str(t_steps),
                                      str(steps), str(threads)], capture_output=True, text=True,
                                     env=env)
                if out.returncode != 0:
                    print(framework, t_steps, "failed:", out.stderr[-2000:])
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print("%-6s %6d %10.3f %10.3f %12.1f %10.1f" % (
                    framework, t_steps, r["median_s"], r["min_s"], r["peak_rss_mib"],
                    r["growth_mib"]))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
