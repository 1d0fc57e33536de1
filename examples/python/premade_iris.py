"""A premade DNNClassifier with feature columns, in the shape of TF 1.x's iris tutorial
(premade_estimator.py with iris_data.py): numeric columns per CSV field, input functions
returning tf.data Datasets of (dict(features), labels), train / evaluate / predict. TF1
code with only the import line changed.

The tutorial downloads iris_training.csv / iris_test.csv; pass them with --train-path /
--test-path. Without them (this machine is offline) the script writes an iris-shaped
stand-in in the same CSV format: 4 measurements, 3 species drawn around the per-species
means and deviations of Fisher's data.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/premade_iris.py --train-steps 300
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import loom.compat.v1 as tf

CSV_COLUMN_NAMES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth", "Species"]
SPECIES = ["Setosa", "Versicolor", "Virginica"]

# Per-species means and standard deviations of the four measurements (Fisher 1936).
_MEANS = [[5.01, 3.43, 1.46, 0.25], [5.94, 2.77, 4.26, 1.33], [6.59, 2.97, 5.55, 2.03]]
_STDS = [[0.35, 0.38, 0.17, 0.11], [0.52, 0.31, 0.47, 0.20], [0.64, 0.32, 0.55, 0.27]]


def write_stand_in(path, rows, seed):
    rng = np.random.RandomState(seed)
    species = rng.randint(0, 3, size=rows)
    x = np.array([rng.normal(_MEANS[s], _STDS[s]) for s in species])
    with open(path, "w") as f:
        f.write("%d,4,setosa,versicolor,virginica\n" % rows)
        for r in range(rows):
            f.write(",".join("%.1f" % v for v in x[r]) + ",%d\n" % species[r])


def load_data(train_path, test_path, y_name="Species"):
    """Returns the iris dataset as (train_x, train_y), (test_x, test_y): dicts of columns
    (the tutorial reads the CSVs with pandas, which this machine lacks; numpy reads them
    here into the same dict-of-columns shape)."""
    def read(path):
        data = np.loadtxt(path, delimiter=",", skiprows=1)
        x = {name: data[:, i].astype(np.float32) for i, name in enumerate(CSV_COLUMN_NAMES[:4])}
        return x, data[:, 4].astype(np.int32)
    return read(train_path), read(test_path)


def train_input_fn(features, labels, batch_size):
    """An input function for training."""
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    dataset = dataset.shuffle(1000).repeat().batch(batch_size)
    return dataset


def eval_input_fn(features, labels, batch_size):
    """An input function for evaluation or prediction."""
    features = dict(features)
    if labels is None:
        inputs = features
    else:
        inputs = (features, labels)
    dataset = tf.data.Dataset.from_tensor_slices(inputs)
    assert batch_size is not None, "batch_size must not be None"
    dataset = dataset.batch(batch_size)
    return dataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", default=100, type=int, help="batch size")
    parser.add_argument("--train-steps", "--train_steps", default=1000, type=int)
    parser.add_argument("--train-path", default=None)
    parser.add_argument("--test-path", default=None)
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--min-accuracy", type=float, default=0.0)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="loom_iris_")
    train_path, test_path = args.train_path, args.test_path
    if train_path is None:
        train_path, test_path = os.path.join(work, "train.csv"), os.path.join(work, "test.csv")
        write_stand_in(train_path, 120, seed=1)
        write_stand_in(test_path, 30, seed=2)
    (train_x, train_y), (test_x, test_y) = load_data(train_path, test_path)

    # Feature columns describe how to use the input.
    my_feature_columns = []
    for key in train_x.keys():
        my_feature_columns.append(tf.feature_column.numeric_column(key=key))

    # Build 2 hidden layer DNN with 10, 10 units respectively.
    classifier = tf.estimator.DNNClassifier(
        feature_columns=my_feature_columns,
        hidden_units=[10, 10],
        n_classes=3,
        model_dir=args.model_dir or os.path.join(work, "model"))

    classifier.train(input_fn=lambda: train_input_fn(train_x, train_y, args.batch_size),
                     steps=args.train_steps)

    eval_result = classifier.evaluate(
        input_fn=lambda: eval_input_fn(test_x, test_y, args.batch_size))
    print("\nTest set accuracy: {accuracy:0.3f}\n".format(**eval_result))

    expected = ["Setosa", "Versicolor", "Virginica"]
    predict_x = {
        "SepalLength": [5.1, 5.9, 6.9],
        "SepalWidth": [3.3, 3.0, 3.1],
        "PetalLength": [1.7, 4.2, 5.4],
        "PetalWidth": [0.5, 1.5, 2.1],
    }
    predictions = classifier.predict(
        input_fn=lambda: eval_input_fn(predict_x, labels=None, batch_size=args.batch_size))

    template = '\nPrediction is "{}" ({:.1f}%), expected "{}"'
    right = 0
    for pred_dict, expec in zip(predictions, expected):
        class_id = pred_dict["class_ids"][0]
        probability = pred_dict["probabilities"][class_id]
        print(template.format(SPECIES[class_id], 100 * probability, expec))
        right += SPECIES[class_id] == expec
    if eval_result["accuracy"] <= args.min_accuracy:
        print("accuracy %.3f is not above %.3f" % (eval_result["accuracy"], args.min_accuracy))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
