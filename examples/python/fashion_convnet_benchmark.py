"""Runs Fashion-MNIST's own TF Estimator benchmark script (Debian's dataset-fashion-mnist:
/usr/share/doc/dataset-fashion-mnist/benchmark/convnet.py.gz) on Loom, unmodified except
for what this runner rewrites as it loads it:
  - the import lines: `import tensorflow as tf` becomes `import loom.compat.v1 as tf`;
    TF's `tensorflow.examples.tutorials.mnist.input_data` and sklearn's
    `sklearn.utils.shuffle` (neither installed here) come from shims/ (input_data reads
    the IDX files, shuffle permutes arrays together, as the originals do);
  - the data path: DATA_DIR becomes --data-dir (Debian's /usr/share/datasets/fashion-mnist);
  - with --steps / --rounds (for a short run), the script's `steps=2000` and
    `range(100)`: it trains --rounds times --steps steps, evaluating after each.
    Without them the script runs as written (100 rounds of 2000 steps: many hours here).
The model_dir stays the script's /tmp/mnist_convnet_model unless --model-dir is given.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/fashion_convnet_benchmark.py \
      --steps 20 --rounds 1 --model-dir /tmp/convnet_short
"""
import argparse
import gzip
import os
import shutil
import sys
import types

SCRIPT = "/usr/share/doc/dataset-fashion-mnist/benchmark/convnet.py.gz"


def rewrite(source, data_dir, steps, rounds, model_dir):
    replacements = [
        ("import tensorflow as tf\n", "import loom.compat.v1 as tf\n"),
        ("from sklearn.utils import shuffle\n", "from sklearn_shim import shuffle\n"),
        ("from tensorflow.examples.tutorials.mnist import input_data\n",
         "from mnist_input_data_shim import input_data\n"),
        ("DATA_DIR = './data/fashion'\n", "DATA_DIR = %r\n" % data_dir),
    ]
    if steps is not None:
        replacements.append(("steps=2000)", "steps=%d)" % steps))
    if rounds is not None:
        replacements.append(("for j in range(100):", "for j in range(%d):" % rounds))
    if model_dir is not None:
        replacements.append(('model_dir="/tmp/mnist_convnet_model"', "model_dir=%r" % model_dir))
    for old, new in replacements:
        if source.count(old) != 1:
            raise SystemExit("convnet.py changed: expected exactly one %r" % old)
        source = source.replace(old, new)
    return source


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", default=SCRIPT)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--model-dir", default=None)
    args = parser.parse_args()
    with gzip.open(args.script, "rt") as f:
        source = f.read()
    source = rewrite(source, args.data_dir, args.steps, args.rounds, args.model_dir)
    if args.model_dir is not None:
        shutil.rmtree(args.model_dir, ignore_errors=True)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "shims"))
    sys.argv = [args.script]
    code = compile(source, "convnet.py", "exec")
    # The script ends in tf.app.run(), which calls __main__.main: make the script __main__.
    script = types.ModuleType("__main__")
    script.__file__ = "convnet.py"
    sys.modules["__main__"] = script
    exec(code, script.__dict__)


if __name__ == "__main__":
    main()
