#!/usr/bin/python3
"""PyTorch 1.13 peer for the input-pipeline benchmark (issue 3): DataLoader over a
TensorDataset of N x 784 float32 features + int64 labels, shuffle=True, batch_size=256,
num_workers=0. Prints one JSON line with batches/s.
Usage: torch_dataloader.py [rows=1000000] [batches=2000]
"""
import json
import sys
import time

import torch

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
batches = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
torch.set_num_threads(1)
x = torch.randn(rows, 784)
y = torch.randint(0, 10, (rows,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=256,
                                     shuffle=True, num_workers=0)


def forever():
    while True:
        for batch in loader:
            yield batch


it = forever()
for _ in range(20):
    next(it)
start = time.perf_counter()
for _ in range(batches):
    next(it)
elapsed = time.perf_counter() - start
print(json.dumps({"peer": "pytorch", "bench": "dataloader", "rows": rows,
                  "batches_per_sec": batches / elapsed}))
