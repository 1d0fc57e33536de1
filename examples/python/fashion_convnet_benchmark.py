"""Runs Fashion-MNIST's own TF Estimator benchmark script (Debian's dataset-fashion-mnist:
/usr/share/doc/dataset-fashion-mnist/benchmark/convnet.py.gz) on Loom, unmodified except
for what this runner rewrites as it loads it:
  - the import lines: `import tensorflow as tf` becomes `import loom.compat.v1 as tf`;
    TF's `tensorflow.examples.tutorials.mnist.input_data` and sklearn's
    `sklearn.utils.shuffle` (neither installed here) come from shims/ (input_data reads
    the IDX files, shuffle permutes arrays together, as the originals do);
  - the data path: DATA_DIR becomes --data-dir (Debian's /usr/share/datasets/fashion-mnist),
    or, with --limit-train / --limit-test, a temporary directory holding the first N
    examples of each file (the suite's short run);
  - with --steps / --rounds (for a short run), the script's `steps=2000` and
    `range(100)`: it trains --rounds times --steps steps, evaluating after each.
    Without them the script runs as written (100 rounds of 2000 steps: many hours here).
The model_dir stays the script's /tmp/mnist_convnet_model unless --model-dir is given
(emptied first, unless --resume: then training goes on from its newest checkpoint, as a
second run of the script would).

  PYTHONPATH=build/python /usr/bin/python3 examples/python/fashion_convnet_benchmark.py \
      --steps 20 --rounds 1 --model-dir /tmp/convnet_short
"""
import argparse
import gzip
import os
import shutil
import sys
import tempfile
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


def write_subset(data_dir, out_dir, limit_train, limit_test):
    """Copies the four IDX files into out_dir, keeping the first examples of each."""
    os.makedirs(out_dir, exist_ok=True)
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                 "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        limit = limit_train if name.startswith("train") else limit_test
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            data = f.read()
        ndim = data[3]
        dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
        count = min(dims[0], limit) if limit else dims[0]
        row = 1
        for d in dims[1:]:
            row *= d
        header = data[:4] + count.to_bytes(4, "big") + data[8:4 + 4 * ndim]
        body = data[4 + 4 * ndim:4 + 4 * ndim + count * row]
        with gzip.open(os.path.join(out_dir, name), "wb") as f:
            f.write(header + body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", default=SCRIPT)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--limit-train", type=int, default=None)
    parser.add_argument("--limit-test", type=int, default=None)
    parser.add_argument("--resume", action="store_true",
                        help="keep --model-dir: training goes on from its checkpoint")
    args = parser.parse_args()
    if args.limit_train or args.limit_test:
        subset = tempfile.mkdtemp(prefix="loom_fashion_subset_")
        write_subset(args.data_dir, subset, args.limit_train, args.limit_test)
        args.data_dir = subset
    with gzip.open(args.script, "rt") as f:
        source = f.read()
    source = rewrite(source, args.data_dir, args.steps, args.rounds, args.model_dir)
    if args.model_dir is not None and not args.resume:
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
