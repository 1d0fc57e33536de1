# Session 16 (api): DepthwiseConv2dNative forward and forward+backward beside PyTorch's
# groups=C conv2d, 1 thread, MobileNet-like layers; loom and torch alternate, 15 rounds of
# best-of-3, medians and minima. Run with PYTHONPATH=build/python (or another build's
# python dir, to compare builds).
import os
import statistics
import sys
import time

import numpy as np
import torch

import loom.compat.v1 as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_bench import cpu_model, load  # noqa: E402

torch.set_num_threads(1)
CASES = [  # (batch, h, w, channels, k, stride, rate)
    (8, 56, 56, 64, 3, 1, 1),
    (8, 112, 112, 32, 3, 2, 1),
    (8, 28, 28, 256, 3, 1, 1),
    (8, 56, 56, 64, 3, 1, 2),
]


def best(f, n=3):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def case(n, h, w, c, k, s, r):
    rng = np.random.RandomState(0)
    x0 = rng.rand(n, h, w, c).astype(np.float32)
    f0 = rng.rand(k, k, c, 1).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, x0.shape)
        f = tf.constant(f0)
        y = tf.nn.depthwise_conv2d_native(x, f, [1, s, s, 1], "SAME", dilations=[1, r, r, 1])
        grads = tf.gradients(tf.reduce_sum(y * y), [x, f])
        sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
    xt = torch.tensor(x0).permute(0, 3, 1, 2).contiguous().requires_grad_()
    ft = torch.tensor(f0).permute(2, 3, 0, 1).contiguous().requires_grad_()
    pad = r * (k - 1) // 2

    def t_fwd():
        with torch.no_grad():
            torch.nn.functional.conv2d(xt, ft, stride=s, padding=pad, dilation=r, groups=c)

    def t_all():
        yt = torch.nn.functional.conv2d(xt, ft, stride=s, padding=pad, dilation=r, groups=c)
        (yt * yt).sum().backward()

    runs = {"loom fwd": lambda: sess.run(y, {x: x0}), "torch fwd": t_fwd,
            "loom fwd+bwd": lambda: sess.run(grads, {x: x0}), "torch fwd+bwd": t_all}
    for fn in runs.values():
        fn()
    times = {k: [] for k in runs}
    for _ in range(15):
        for name, fn in runs.items():
            times[name].append(best(fn))
    label = "depthwise %dx%d s%d rate %d [%d,%d,%d,%d]" % (k, k, s, r, n, h, w, c)
    for what in ("fwd", "fwd+bwd"):
        lm, tm = statistics.median(times["loom " + what]), statistics.median(times["torch " + what])
        ln, tn = min(times["loom " + what]), min(times["torch " + what])
        print("%s %-7s loom median %.2f ms min %.2f | torch median %.2f ms min %.2f | "
              "ratio median %.2f min %.2f | load %s"
              % (label, what, lm * 1e3, ln * 1e3, tm * 1e3, tn * 1e3, lm / tm, ln / tn, load()))


for c in CASES:
    try:
        case(*c)
    except NotImplementedError as e:  # a build without the op's dilations
        print("case %r: %s" % (c, e))
print(cpu_model(), "| torch", torch.__version__, "| 1 thread")
