#!/usr/bin/python3
"""PyTorch 1.13 (Debian's python3-torch) side of the core benchmarks.

Same models, batch sizes and thread counts as core_bench.cc; data already in memory.
Prints one JSON line: {"model": ..., "threads": ..., "steps_per_sec": ..., "ms_per_step": ...}
Usage: torch_peer.py MODEL THREADS [STEPS] [INTEROP]
  MODEL: mlp | softreg | convnet | predict_dnn | predict_convnet
  predict_*: inference throughput under torch.inference_mode() (softmax probabilities of
  the demo's DNN 784-256-128-10 at batch 1024, of the convnet at batch 256); the JSON line
  adds rows_per_sec.
  MODEL:bf16 (mlp:bf16, ...): the same under torch.autocast("cpu", dtype=torch.bfloat16),
  PyTorch's mixed bf16 (core_bench's MODEL:bf16 is Loom's).
"""
import contextlib
import json
import sys
import time

import torch

model_name, _, precision = sys.argv[1].partition(":")
if precision not in ("", "float32", "bf16"):
    raise SystemExit("precision must be float32 or bf16, got " + precision)
autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if precision == "bf16" \
    else contextlib.nullcontext
threads = int(sys.argv[2])
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
interop = int(sys.argv[4]) if len(sys.argv) > 4 else 1
torch.set_num_threads(threads)
try:
    torch.set_num_interop_threads(interop)
except RuntimeError:
    pass
torch.manual_seed(0)

predict = model_name.startswith("predict_")
if model_name == "predict_dnn":
    batch = 1024
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    x = torch.randn(batch, 784)
    opt = None
elif model_name == "mlp":
    batch = 256
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10))
    x = torch.randn(batch, 784)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
elif model_name == "softreg":
    batch = 32
    model = torch.nn.Linear(784, 10)
    x = torch.randn(batch, 784)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
elif model_name in ("convnet", "predict_convnet"):
    batch = 256 if predict else 64

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(1, 32, 5, padding=2)
            self.c2 = torch.nn.Conv2d(32, 64, 5, padding=2)
            self.d1 = torch.nn.Linear(7 * 7 * 64, 1024)
            self.d2 = torch.nn.Linear(1024, 10)
            self.drop = torch.nn.Dropout(0.4)

        def forward(self, x):
            x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
            x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
            x = self.drop(torch.relu(self.d1(x.flatten(1))))
            return self.d2(x)

    model = Net()
    x = torch.randn(batch, 1, 28, 28)
    opt = None if predict else torch.optim.Adam(model.parameters(), lr=1e-3)
else:
    raise SystemExit("unknown model " + model_name)

y = torch.randint(0, 10, (batch,))
loss_fn = torch.nn.CrossEntropyLoss()


def train_step():
    opt.zero_grad()
    with autocast():
        loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()


def predict_step():
    with torch.inference_mode(), autocast():
        torch.softmax(model(x), dim=1)


if predict:
    model.eval()
step = predict_step if predict else train_step
for _ in range(max(5, steps // 10)):
    step()
start = time.perf_counter()
min_step = float("inf")  # the fastest step: what other processes disturb least
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    min_step = min(min_step, time.perf_counter() - t0)
elapsed = time.perf_counter() - start
print(json.dumps({"peer": "pytorch", "model": sys.argv[1], "threads": threads, "interop": interop,
                  "steps_per_sec": steps / elapsed, "ms_per_step": 1000 * elapsed / steps,
                  "rows_per_sec": batch * steps / elapsed, "min_ms_per_step": 1000 * min_step}))
