# Session 15 (pyapi): tf.nn.depthwise_conv2d and tf.nn.conv2d_transpose, forward + backward, beside
# PyTorch (groups=C conv2d, conv_transpose2d) at 1 thread; run with PYTHONPATH=build/python.
import os
import sys
import time

import numpy as np
import torch

import loom.compat.v1 as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_bench import cpu_model, load  # noqa: E402 (the shared header fields)
torch.set_num_threads(1)
def best(f, n=5):
    f(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return min(ts)
rng=np.random.RandomState(0)
x0=rng.rand(8,56,56,64).astype(np.float32); f0=rng.rand(3,3,64,1).astype(np.float32)
g=tf.Graph()
with g.as_default():
    x=tf.constant(x0); f=tf.constant(f0)
    y=tf.nn.depthwise_conv2d(x,f,[1,1,1,1],"SAME"); l=tf.reduce_sum(y*y); gr=tf.gradients(l,[x,f])
    v=tf.constant(rng.rand(8,28,28,64).astype(np.float32)); w=tf.constant(rng.rand(3,3,32,64).astype(np.float32))
    t=tf.nn.conv2d_transpose(v,w,[8,56,56,32],[1,2,2,1],"SAME"); lt=tf.reduce_sum(t*t); gt=tf.gradients(lt,[v,w])
    sess=tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
xt=torch.tensor(x0).permute(0,3,1,2).contiguous().requires_grad_(); ft=torch.tensor(f0).permute(2,3,0,1).contiguous().requires_grad_()
vt=torch.rand(8,64,28,28,requires_grad=True); wt=torch.rand(64,32,3,3,requires_grad=True)
def tdw():
    y=torch.nn.functional.conv2d(xt,ft,padding=1,groups=64); (y*y).sum().backward()
def ttr():
    y=torch.nn.functional.conv_transpose2d(vt,wt,stride=2,padding=1,output_padding=1); (y*y).sum().backward()
for r in range(2):
    a=best(lambda: sess.run(gr)); b=best(tdw)
    print("depthwise 3x3 [8,56,56,64] fwd+bwd, 1 thread: loom %.4fs torch %.4fs ratio %.2f load %s"%(a,b,a/b,load()))
    a=best(lambda: sess.run(gt)); b=best(ttr)
    print("conv2d_transpose 3x3 s2 [8,28,28,64]->[8,56,56,32] fwd+bwd, 1 thread: loom %.4fs torch %.4fs ratio %.2f load %s"%(a,b,a/b,load()))
print(cpu_model())
