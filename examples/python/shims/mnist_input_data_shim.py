"""TF's tensorflow.examples.tutorials.mnist.input_data for the Fashion-MNIST benchmark
script: read_data_sets(dir, one_hot=False, validation_size=0) reading the four gzipped IDX
files, images as float32 [n, 784] scaled to [0, 1] and labels as uint8, as TF's does."""
import collections
import gzip
import os

import numpy as np


def _read(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class DataSet:
    def __init__(self, images, labels):
        self.images = images
        self.labels = labels
        self.num_examples = len(images)


Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


class input_data:  # the module the script imports, as a namespace
    @staticmethod
    def read_data_sets(train_dir, one_hot=False, validation_size=5000, **unused):
        def images(name):
            x = _read(os.path.join(train_dir, name))
            return (x.reshape(len(x), -1) / np.float32(255)).astype(np.float32)

        def labels(name):
            y = _read(os.path.join(train_dir, name))
            return np.eye(10, dtype=np.float32)[y] if one_hot else y

        train_x = images("train-images-idx3-ubyte.gz")
        train_y = labels("train-labels-idx1-ubyte.gz")
        test = DataSet(images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz"))
        validation = DataSet(train_x[:validation_size], train_y[:validation_size])
        train = DataSet(train_x[validation_size:], train_y[validation_size:])
        return Datasets(train=train, validation=validation, test=test)
