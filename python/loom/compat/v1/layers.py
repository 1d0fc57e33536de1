"""tf.layers over Loom's C++ layers (loom/estimator/layers.h): each call builds one layer
in a fresh unique scope ("dense", "dense_1", ...) with variables named as TF names them
("dense/kernel", "conv2d/bias"); batch_normalization in training adds its moving-average
updates to tf.GraphKeys.UPDATE_OPS. The activation is applied here, inside the layer's
scope ("dense/Relu"), so any Python activation works. Only channels_last (NHWC) images;
regularizers, constraints, reuse and the layer classes (tf.layers.Dense, ...) are not
supported (docs/python.md)."""
from loom import _loom
from loom.compat.v1 import _framework as _fw


def _initializer(init, what):
    """A tf.*_initializer object as the (kind, params) pair the C++ bindings take."""
    if init is None:
        return None
    kind = type(init).__name__
    if kind == "zeros_initializer":
        return ("zeros", {})
    if kind == "ones_initializer":
        return ("ones", {})
    if kind == "constant_initializer":
        value = init.value
        if not isinstance(value, (int, float)):
            raise NotImplementedError("%s: constant_initializer with an array is not supported "
                                      "in tf.layers" % what)
        return ("constant", {"value": float(value)})
    if kind == "random_normal_initializer":
        return ("random_normal", {"mean": init.mean, "stddev": init.stddev, "seed": init.seed})
    if kind == "truncated_normal_initializer":
        return ("truncated_normal", {"mean": init.mean, "stddev": init.stddev,
                                     "seed": init.seed})
    if kind == "random_uniform_initializer":
        return ("random_uniform", {"minval": init.minval,
                                   "maxval": 1.0 if init.maxval is None else init.maxval,
                                   "seed": init.seed})
    if kind == "variance_scaling_initializer":
        return ("variance_scaling", {"scale": init.scale, "mode": init.mode,
                                     "distribution": init.distribution, "seed": init.seed})
    raise NotImplementedError("%s: initializer %s is not supported in tf.layers; use one of "
                              "tf's *_initializer classes" % (what, kind))


def _unsupported(what, **kwargs):
    for name, value in kwargs.items():
        if value is not None:
            raise NotImplementedError("tf.layers.%s: %s is not supported" % (what, name))


def _inputs(inputs):
    t = _fw.convert_to_tensor(inputs)
    return t.graph, t


def _activate(graph, out, activation):
    """The layer's output with the activation applied in the layer's scope."""
    t = graph._tensor(out)
    if activation is None:
        return t
    scope = out.node.name.rsplit("/", 1)[0] if "/" in out.node.name else ""
    with graph.as_default(), graph.name_scope(scope + "/" if scope else None):
        return activation(t)


def _check_format(data_format, what):
    if data_format not in ("channels_last", None):
        raise NotImplementedError("tf.layers.%s: data_format='%s'; only 'channels_last' (NHWC) "
                                  "is supported" % (what, data_format))


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """tf.layers.dense: activation(inputs . kernel + bias)."""
    _unsupported("dense", kernel_regularizer=kernel_regularizer,
                 bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                 kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                 reuse=reuse)
    graph, x = _inputs(inputs)
    out = _loom.layers_dense(graph._g, graph.get_name_scope(), x._out, int(units), use_bias,
                             _initializer(kernel_initializer, "dense"),
                             _initializer(bias_initializer, "dense"), trainable,
                             name or "dense")
    return _activate(graph, out, activation)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv2d on NHWC inputs."""
    _check_format(data_format, "conv2d")
    if tuple(dilation_rate) not in ((1, 1), (1,)) and dilation_rate != 1:
        raise NotImplementedError("tf.layers.conv2d: dilation_rate is not supported")
    _unsupported("conv2d", kernel_regularizer=kernel_regularizer,
                 bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                 kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                 reuse=reuse)
    graph, x = _inputs(inputs)
    out = _loom.layers_conv2d(graph._g, graph.get_name_scope(), x._out, int(filters),
                              _size(kernel_size), _size(strides), padding, use_bias,
                              _initializer(kernel_initializer, "conv2d"),
                              _initializer(bias_initializer, "conv2d"), trainable,
                              name or "conv2d")
    return _activate(graph, out, activation)


def _size(value):
    return int(value) if isinstance(value, int) else [int(v) for v in value]


def _pooling(kind, inputs, pool_size, strides, padding, data_format, name):
    _check_format(data_format, kind + "_pooling2d")
    graph, x = _inputs(inputs)
    out = _loom.layers_pooling2d(graph._g, graph.get_name_scope(), kind, x._out,
                                 _size(pool_size), _size(strides), padding,
                                 name or "")
    return graph._tensor(out)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """tf.layers.max_pooling2d."""
    return _pooling("max", inputs, pool_size, strides, padding, data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """tf.layers.average_pooling2d (padding cells not counted, as TF)."""
    return _pooling("average", inputs, pool_size, strides, padding, data_format, name)


def flatten(inputs, name=None, data_format="channels_last"):
    """tf.layers.flatten: [batch, ...] -> [batch, prod(...)]."""
    _check_format(data_format, "flatten")
    graph, x = _inputs(inputs)
    return graph._tensor(_loom.layers_flatten(graph._g, graph.get_name_scope(), x._out))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout: inverted dropout when training (a Python bool, as the mode
    comparison in a model_fn gives), the identity otherwise."""
    _unsupported("dropout", noise_shape=noise_shape)
    if isinstance(training, _fw.Tensor):
        raise NotImplementedError("tf.layers.dropout: training must be a Python bool (e.g. "
                                  "mode == tf.estimator.ModeKeys.TRAIN), not a tensor")
    graph, x = _inputs(inputs)
    return graph._tensor(_loom.layers_dropout(graph._g, graph.get_name_scope(), x._out,
                                              float(rate), bool(training), seed,
                                              name or "dropout"))


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """tf.layers.batch_normalization; in training its updates go to UPDATE_OPS."""
    _unsupported("batch_normalization", beta_initializer=beta_initializer,
                 gamma_initializer=gamma_initializer,
                 moving_mean_initializer=moving_mean_initializer,
                 moving_variance_initializer=moving_variance_initializer,
                 beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                 beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
                 reuse=reuse, renorm_clipping=renorm_clipping,
                 virtual_batch_size=virtual_batch_size, adjustment=adjustment)
    if renorm:
        raise NotImplementedError("tf.layers.batch_normalization: renorm is not supported")
    if isinstance(training, _fw.Tensor):
        raise NotImplementedError("tf.layers.batch_normalization: training must be a Python "
                                  "bool, not a tensor")
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise NotImplementedError("tf.layers.batch_normalization: one axis only")
        axis = axis[0]
    graph, x = _inputs(inputs)
    return graph._tensor(_loom.layers_batch_normalization(
        graph._g, graph.get_name_scope(), x._out, int(axis), float(momentum), float(epsilon),
        center, scale, bool(training), trainable, name or "batch_normalization"))
