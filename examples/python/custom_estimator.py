"""A custom model_fn Estimator in the shape of TF 1.x's "Build a Convolutional Neural
Network using Estimators" (MNIST) tutorial, on Fashion-MNIST: tf.layers, tf.losses,
tf.metrics.accuracy, and a LoggingTensorHook that finds its tensor by name. Written as TF1
code with only the import line changed.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/custom_estimator.py \
      --steps 200 --train-examples 2000 --eval-examples 500

Prints the evaluation metrics as a dict, and exits non-zero if accuracy is not above
--min-accuracy (the suite runs it small, where chance is 0.10).
"""
import argparse
import gzip
import os
import shutil
import sys

import numpy as np
import loom.compat.v1 as tf

tf.logging.set_verbosity(tf.logging.INFO)

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def load_idx(path):
    """Reads a (gzipped) IDX file as numpy, as input_data does."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def cnn_model_fn(features, labels, mode):
    """Model function for CNN (the tutorial's, with narrower layers for a CPU test)."""
    input_layer = tf.reshape(features["x"], [-1, 28, 28, 1])
    conv1 = tf.layers.conv2d(inputs=input_layer, filters=8, kernel_size=[5, 5],
                             padding="same", activation=tf.nn.relu)
    pool1 = tf.layers.max_pooling2d(inputs=conv1, pool_size=[2, 2], strides=2)
    conv2 = tf.layers.conv2d(inputs=pool1, filters=16, kernel_size=[5, 5],
                             padding="same", activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(inputs=conv2, pool_size=[2, 2], strides=2)
    pool2_flat = tf.reshape(pool2, [-1, 7 * 7 * 16])
    dense = tf.layers.dense(inputs=pool2_flat, units=128, activation=tf.nn.relu)
    dropout = tf.layers.dropout(inputs=dense, rate=0.4,
                                training=mode == tf.estimator.ModeKeys.TRAIN)
    logits = tf.layers.dense(inputs=dropout, units=10)

    predictions = {
        "classes": tf.argmax(input=logits, axis=1),
        "probabilities": tf.nn.softmax(logits, name="softmax_tensor"),
    }
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode=mode, predictions=predictions)

    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)

    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.05)
        train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

    eval_metric_ops = {
        "accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions["classes"])
    }
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops=eval_metric_ops)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--train-examples", type=int, default=60000)
    parser.add_argument("--eval-examples", type=int, default=10000)
    parser.add_argument("--model-dir", default="/tmp/loom_py_custom_estimator")
    parser.add_argument("--min-accuracy", type=float, default=0.0)
    args = parser.parse_args()

    train_data = load_idx(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz"))
    train_data = (train_data[:args.train_examples] / np.float32(255)).reshape(-1, 784)
    train_labels = load_idx(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz"))
    train_labels = np.asarray(train_labels[:args.train_examples], dtype=np.int32)
    eval_data = load_idx(os.path.join(DATA_DIR, "t10k-images-idx3-ubyte.gz"))
    eval_data = (eval_data[:args.eval_examples] / np.float32(255)).reshape(-1, 784)
    eval_labels = load_idx(os.path.join(DATA_DIR, "t10k-labels-idx1-ubyte.gz"))
    eval_labels = np.asarray(eval_labels[:args.eval_examples], dtype=np.int32)

    shutil.rmtree(args.model_dir, ignore_errors=True)
    classifier = tf.estimator.Estimator(model_fn=cnn_model_fn, model_dir=args.model_dir)

    # Log the predicted probabilities by the tensor's name, as the tutorial does.
    tensors_to_log = {"probabilities": "softmax_tensor"}
    logging_hook = tf.train.LoggingTensorHook(tensors=tensors_to_log, every_n_iter=50)

    train_input_fn = tf.estimator.inputs.numpy_input_fn(
        x={"x": train_data}, y=train_labels, batch_size=100, num_epochs=None, shuffle=True)
    classifier.train(input_fn=train_input_fn, steps=args.steps, hooks=[logging_hook])

    eval_input_fn = tf.estimator.inputs.numpy_input_fn(
        x={"x": eval_data}, y=eval_labels, num_epochs=1, shuffle=False)
    eval_results = classifier.evaluate(input_fn=eval_input_fn)
    print(eval_results)

    predictions = list(classifier.predict(input_fn=tf.estimator.inputs.numpy_input_fn(
        x={"x": eval_data[:5]}, num_epochs=1, shuffle=False)))
    print("first predictions:", [int(p["classes"]) for p in predictions])
    if len(predictions) != 5 or predictions[0]["probabilities"].shape != (10,):
        print("predict returned", len(predictions), "examples")
        return 1
    if eval_results["accuracy"] <= args.min_accuracy:
        print("accuracy %.3f is not above %.3f" % (eval_results["accuracy"], args.min_accuracy))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
