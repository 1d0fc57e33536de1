# Session 16 (api): tf.nn.conv2d_transpose forward, plain and dilated (rate 2), beside
# PyTorch's conv_transpose2d, 1 thread, minimum of 5 alternating runs; PYTHONPATH=build/python.
import os
import sys
import time

import numpy as np
import torch

import loom.compat.v1 as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_bench import cpu_model, load  # noqa: E402
torch.set_num_threads(1)
rng=np.random.RandomState(0)
v0=rng.rand(8,28,28,64).astype(np.float32); w0=rng.rand(3,3,32,64).astype(np.float32)
for rate in (1,2):
    g=tf.Graph()
    with g.as_default():
        v=tf.constant(v0); w=tf.constant(w0)
        y=tf.nn.conv2d_transpose(v,w,[8,28,28,32],[1,1,1,1],"SAME",dilations=rate)
        sess=tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
    vt=torch.tensor(v0).permute(0,3,1,2).contiguous(); wt=torch.tensor(w0).permute(3,2,0,1).contiguous()
    def t(): 
        with torch.no_grad(): torch.nn.functional.conv_transpose2d(vt,wt,padding=rate,dilation=rate)
    def l(): sess.run(y)
    for f in (t,l): f()
    lt=[];tt=[]
    for _ in range(5):
        s=time.perf_counter(); l(); lt.append(time.perf_counter()-s)
        s=time.perf_counter(); t(); tt.append(time.perf_counter()-s)
    print("conv2d_transpose 3x3 rate %d [8,28,28,64]->[8,28,28,32] fwd: loom min %.2f ms torch min %.2f ms load %s"%(rate,min(lt)*1e3,min(tt)*1e3,load()))
print(cpu_model(), "| 1 thread")
