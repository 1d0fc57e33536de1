"""tf.layers over Loom's C++ layers (loom/estimator/layers.h), named as TF1 names them.

Variables follow variable scopes only, never name scopes (TF1's tf.layers make them with
tf.get_variable): a layer opens a variable scope, "dense" (or its name), made unique inside
the current variable scope ("dense", "dense_1"), so `tf.layers.dense(x, 3, name="d")`
under `tf.name_scope("foo")` or in a tf.while_loop body makes "d/kernel" and "d/bias",
under `tf.variable_scope("vs")` "vs/d/kernel". Its ops go to the name scope that variable
scope opened ("foo/d/MatMul"), and a later call of the same layer object builds there again
("foo/d/MatMul_1") on the same variables. A functional call with a name opens exactly that
scope: calling it twice without reuse is TF's "Variable d/kernel already exists" error;
reuse=True, or a variable scope with reuse=True / tf.AUTO_REUSE, shares the variables, and
tf.get_variable("kernel") in the layer's scope with reuse returns them. A layer's
kernel_initializer default is the variable scope's initializer, else glorot_uniform; the
variable scope's regularizer applies to every variable a layer makes, as tf.get_variable's
does in TF1. Variable-free layers (pooling, flatten, dropout) open only a name scope.

batch_normalization in training adds its moving-average updates to
tf.GraphKeys.UPDATE_OPS; training may be a bool tensor (an is_training placeholder): the
output is then a tf.cond between batch and moving statistics and the updates assign only
when it is true, as TF1's smart_cond. The activation is applied here, inside the layer's
scope ("dense/Relu"), so any Python activation works. Regularizers (any Python function of
the variable, e.g. tf.contrib.layers.l2_regularizer(0.1)) are called by the C++ layer on
each variable it makes (not on reused ones, as TF) and their penalties go to
REGULARIZATION_LOSSES ("dense/kernel_regularizer/penalty"); activity_regularizer is
applied to the output. kernel_constraint / bias_constraint are applied by the optimizers
after each update, as TF1's are. Only channels_last (NHWC) images (docs/python.md).

separable_conv2d / SeparableConv2D, conv2d_transpose / Conv2DTranspose and DepthwiseConv2D
(tf.keras.layers') are loom/estimator/layers_conv_variants.h, with TF's variable names
("separable_conv2d/depthwise_kernel", "pointwise_kernel", "bias";
"depthwise_conv2d/depthwise_kernel"; "conv2d_transpose/kernel"). The classes also serve as
tf.keras.layers.SeparableConv2D / Conv2DTranspose / DepthwiseConv2D (string activations and
initializers accepted; DepthwiseConv2D defaults to 'glorot_uniform', the other two to the
variable scope's initializer, else glorot_uniform); their variables follow variable scopes
as tf.layers', where Keras' follow name scopes: the same names outside any scope."""
from loom import _loom
from loom.compat.v1 import _framework as _fw


# Keras' initializer names (tf.keras.layers' string arguments), as binding kinds.
_KERAS_INITIALIZERS = ("zeros", "ones", "glorot_uniform", "glorot_normal", "he_normal",
                       "he_uniform")


def _initializer(init, what):
    """A tf.*_initializer object (or a Keras initializer name) as the (kind, params) pair the
    C++ bindings take."""
    if init is None:
        return None
    if isinstance(init, str):
        if init not in _KERAS_INITIALIZERS:
            raise NotImplementedError("%s: initializer '%s' is not supported; use one of %s or "
                                      "a tf.*_initializer object"
                                      % (what, init, ", ".join(_KERAS_INITIALIZERS)))
        return (init, {})
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


def _native_regularizer(graph, regularizer, what):
    """A Python regularizer as what the C++ layer calls: (name scope, variable) -> the
    penalty's Output, or None for no penalty (TF's l2_regularizer(0.0))."""
    if regularizer is None:
        return None
    if not callable(regularizer):
        raise TypeError("%s must be callable (e.g. tf.contrib.layers.l2_regularizer(0.1)), "
                        "got %r" % (what, regularizer))

    def call(prefix, variable):
        with graph.as_default(), graph.name_scope(prefix + "/" if prefix else None):
            penalty = regularizer(graph._tensor(variable))
        return None if penalty is None else _fw.convert_to_tensor(penalty)._out
    return call


def _activity_regularize(graph, out, activity_regularizer):
    """TF's activity_regularizer: its penalty on the layer's output goes to
    REGULARIZATION_LOSSES."""
    if activity_regularizer is None:
        return out
    scope = out.op.name.rsplit("/", 1)[0] if "/" in out.op.name else ""
    with graph.as_default(), graph.name_scope((scope + "/" if scope else "") +
                                              "ActivityRegularizer/"):
        penalty = activity_regularizer(out)
    if penalty is not None:
        graph.add_to_collection(_fw.GraphKeys.REGULARIZATION_LOSSES, penalty)
    return out


def _inputs(inputs):
    t = _fw.convert_to_tensor(inputs)
    return t.graph, t


# Keras' activation names (tf.keras.layers' string arguments): namespace and function.
_KERAS_ACTIVATIONS = {"relu": "nn", "relu6": "nn", "elu": "nn", "softplus": "nn",
                      "softmax": "nn", "tanh": "", "sigmoid": ""}


def _activation_fn(activation, what):
    """A Python activation, or a Keras activation name as its function; None for linear."""
    if activation is None or activation == "linear":
        return None
    if isinstance(activation, str):
        if activation not in _KERAS_ACTIVATIONS:
            raise NotImplementedError("%s: activation '%s' is not supported; use one of %s or "
                                      "a function" % (what, activation,
                                                      ", ".join(sorted(_KERAS_ACTIVATIONS))))
        return _ops(_KERAS_ACTIVATIONS[activation])[activation]
    if not callable(activation):
        raise TypeError("%s: activation must be callable or a name, got %r" % (what, activation))
    return activation


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
    return Dense(units, activation, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                 bias_constraint, trainable, name, _scope=name, _reuse=reuse)(inputs)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv2d on NHWC inputs."""
    return Conv2D(filters, kernel_size, strides, padding, data_format, dilation_rate,
                  activation, use_bias, kernel_initializer, bias_initializer,
                  kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                  bias_constraint, trainable, name, _scope=name, _reuse=reuse)(inputs)


def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=None,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None,
                     depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                     trainable=True, name=None, reuse=None):
    """tf.layers.separable_conv2d on NHWC inputs: a depthwise convolution, then a 1x1
    convolution mixing the channels, plus the bias."""
    return SeparableConv2D(filters, kernel_size, strides, padding, data_format, dilation_rate,
                           depth_multiplier, activation, use_bias, depthwise_initializer,
                           pointwise_initializer, bias_initializer, depthwise_regularizer,
                           pointwise_regularizer, bias_regularizer, activity_regularizer,
                           depthwise_constraint, pointwise_constraint, bias_constraint,
                           trainable, name, _scope=name, _reuse=reuse)(inputs)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv2d_transpose on NHWC inputs (the kernel [kh, kw, filters, in_channels])."""
    return Conv2DTranspose(filters, kernel_size, strides, padding, data_format=data_format,
                           activation=activation, use_bias=use_bias,
                           kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer,
                           kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer,
                           activity_regularizer=activity_regularizer,
                           kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                           trainable=trainable, name=name, _scope=name, _reuse=reuse)(inputs)


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
    dims = x.shape.dims
    if dims is not None and len(dims) >= 2 and any(d is None for d in dims[1:]):
        # Dims known only when it runs ([?, ?, 4]: a sequence of any length): TF's
        # reshape(x, [shape(x)[0], -1]); it was an InvalidArgumentError.
        from loom.compat import v1 as tf
        with graph.name_scope(name or "flatten"):
            return tf.reshape(x, [tf.shape(x)[0], -1])
    return graph._tensor(_loom.layers_flatten(graph._g, graph.get_name_scope(), x._out))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout: inverted dropout when training, the identity otherwise.
    `training` is a Python bool (as the mode comparison in a model_fn gives) or a boolean
    tensor (an is_training placeholder): then a tf.cond picks at run time, as TF1's
    smart_cond does, and the random mask is drawn only when training."""
    _unsupported("dropout", noise_shape=noise_shape)
    if isinstance(training, _fw.Tensor):
        from loom.compat.v1 import control_flow
        return control_flow.smart_cond(
            training,
            lambda: dropout(inputs, rate, noise_shape, seed, True, name),
            lambda: _ops()["identity"](inputs))
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
    """tf.layers.batch_normalization; in training its updates go to UPDATE_OPS. training:
    a Python bool or a bool tensor (then a tf.cond picks at run time)."""
    return BatchNormalization(
        axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
        moving_mean_initializer, moving_variance_initializer, beta_regularizer,
        gamma_regularizer, beta_constraint, gamma_constraint, renorm, renorm_clipping,
        renorm_momentum, fused, trainable, virtual_batch_size, adjustment, name,
        _scope=name, _reuse=reuse)(inputs, training=training)


# ---- the layer classes -------------------------------------------------------------------

_IGNORED_KWARGS = ("input_shape", "batch_input_shape", "dynamic", "autocast", "dtype")


class Layer:
    """tf.layers.Layer, the base of the classes below. The first call opens the layer's
    variable scope (see the module comment) and builds its variables and ops; every call
    builds the ops in that scope's name scope on the same variables. `variables` /
    `weights`, `trainable_variables` / `trainable_weights`, `non_trainable_variables`,
    `losses` (its regularization penalties) and `updates` (its UPDATE_OPS members) are what
    TF's layer objects give; `scope_name` is the variable scope's name.

    Subclassing, as TF1 code does: override build(input_shape) to make variables with
    add_weight(name, shape, ...) (tf.get_variable in the layer's variable scope, so named
    "<scope>/<name>"; default scope name the class name in snake_case) and call(inputs, ...)
    to build the ops; __call__ runs build once, then call."""

    _default_name = None  # the snake_case class name
    _scoped = True  # opens a variable scope (the layers with variables and subclasses)

    def __init__(self, trainable=True, name=None, **kwargs):
        reuse = kwargs.pop("_reuse", None)
        scope = kwargs.pop("_scope", None)
        for key in _IGNORED_KWARGS:
            kwargs.pop(key, None)
        if kwargs:
            raise TypeError("Keyword argument not understood: %s" % sorted(kwargs)[0])
        self.trainable = trainable
        self._reuse = reuse
        self._given_name = name
        if self._default_name is None:
            self._default_name = _snake_case(type(self).__name__)
        self._base_name = name or self._default_name
        self.built = False
        self._graph = None
        self._vscope = None  # the layer's VariableScope, set on the first call
        if scope and self._scoped:
            # The functional forms' name: exactly that scope, opened now (TF1's _scope).
            from loom.compat.v1 import _variables
            with _variables.variable_scope(scope) as captured:
                self._vscope = captured
        self._vars = []
        self._created = set()  # names of the variables this layer made (not reused ones)
        self._losses = []
        self._updates = []
        self._building = None
        self._calling = None

    @property
    def name(self):
        if self._vscope is not None:
            return self._vscope.name.rsplit("/", 1)[-1]
        return self._base_name

    @property
    def scope_name(self):
        return None if self._vscope is None else self._vscope.name

    @property
    def variables(self):
        """Its own variables, then those of the layers it holds as attributes (a
        subclass's sublayers, as TF's layers track them)."""
        out = list(self._vars)
        for layer in self._sublayers():
            out += [v for v in layer.variables if all(v is not w for w in out)]
        return out

    weights = variables

    def _sublayers(self):
        found = []
        for value in self.__dict__.values():
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(item, Layer) and item is not self and item not in found:
                    found.append(item)
        return found

    @property
    def trainable_variables(self):
        if not self.trainable or self._graph is None:
            return []
        trainable = {v.name for v in self._graph.get_collection(
            _fw.GraphKeys.TRAINABLE_VARIABLES)}
        return [v for v in self.variables if v.name in trainable]

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self):
        trainable = {v.name for v in self.trainable_variables}
        return [v for v in self.variables if v.name not in trainable]

    non_trainable_weights = non_trainable_variables

    @property
    def losses(self):
        return list(self._losses)

    @property
    def updates(self):
        return list(self._updates)

    def __call__(self, inputs, *args, **kwargs):
        graph, x = _inputs(inputs)
        if self.built and graph is not self._graph:
            raise ValueError("layer %s was built in another graph; make a new layer object "
                             "for this one" % self.name)
        keys = _fw.GraphKeys
        with graph.as_default():
            n_losses = len(graph.get_collection(keys.REGULARIZATION_LOSSES))
            n_updates = len(graph.get_collection(keys.UPDATE_OPS))
            self._calling = graph
            try:
                if self._scoped:
                    out = self._scoped_call(graph, x, *args, **kwargs)
                else:
                    out = self._build_ops(graph, x, *args, **kwargs)
                    self._graph = graph
                    self.built = True
            finally:
                self._calling = None
            self._losses += graph.get_collection(keys.REGULARIZATION_LOSSES)[n_losses:]
            self._updates += graph.get_collection(keys.UPDATE_OPS)[n_updates:]
        return out

    def _scoped_call(self, graph, x, *args, **kwargs):
        """TF1's Layer.__call__: the variable scope (made on the first call), entered with
        reuse once built, and its original name scope for the ops."""
        from loom.compat.v1 import _variables
        if self._vscope is None:
            if self._reuse:
                context = _variables.variable_scope(self._base_name)
            else:
                context = _variables.variable_scope(None, default_name=self._base_name)
            with context as captured:
                self._vscope = captured
        reuse = True if self.built else self._reuse
        with _variables.variable_scope(self._vscope, reuse=reuse, auxiliary_name_scope=False), \
                graph.name_scope(self._vscope.original_name_scope or None):
            first = not self.built
            if first and self._subclassed():
                self._building = graph
                try:
                    self.build(x.shape)
                finally:
                    self._building = None
            out = self._build_ops(graph, x, *args, **kwargs)
            if first:
                self._graph = graph
                self.built = True
                self._after_build(graph)
        return out

    def _variable_getter(self, graph):
        """The C++ layer's variable getter (layers.h VariableGetter): the variable
        "<variable scope>/<name>" as tf.get_variable gives it, recorded in the layer."""
        from loom.compat.v1 import _variables

        def getter(name, shape, dtype, trainable, make):
            var, made = _variables._layer_variable(graph, name, shape, make)
            self._remember(var, made)
            return var._out
        return getter

    def _remember(self, var, made):
        if all(v is not var for v in self._vars):
            self._vars.append(var)
        if made:
            self._created.add(var.name)

    def apply(self, inputs, *args, **kwargs):
        """TF's Layer.apply: the same as calling the layer."""
        return self.__call__(inputs, *args, **kwargs)

    # --- the subclassing protocol (TF's build / call / add_weight) -------------------
    def build(self, input_shape):
        """Makes the layer's variables (with add_weight); called once, before call."""

    def call(self, inputs, *args, **kwargs):
        """Builds the layer's ops on inputs; override it in a subclass."""
        raise NotImplementedError("%s must override call(inputs)" % type(self).__name__)

    def _subclassed(self):
        return type(self).call is not Layer.call

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None, **kwargs):
        """TF1's Layer.add_weight: tf.get_variable(name) in the layer's variable scope
        ("<scope>/<name>", shared under reuse; initializer default the scope's, else
        glorot_uniform for floats and zeros otherwise; the scope's regularizer applies as
        get_variable's); a regularizer's penalty
        ("<layer name scope>/<name>/Regularizer/...") goes to REGULARIZATION_LOSSES for a
        variable made now; a constraint is applied by the optimizers after each update."""
        from loom.compat.v1 import _variables
        from loom.compat.v1 import dtypes as _dtypes
        if self._building is None:
            raise RuntimeError("add_weight must be called from the layer's build()")
        graph = self._building
        dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        scope = _variables.get_variable_scope()
        full = scope.name + "/" + name if scope.name else name
        exists = full in graph.__dict__.get("_variable_store", {})
        variable = _variables.get_variable(name, shape, dtype=dtype, initializer=initializer,
                                           trainable=trainable and self.trainable,
                                           constraint=constraint)
        self._remember(variable, not exists)
        if regularizer is not None and not exists:
            with graph.name_scope(name + "/Regularizer"):
                penalty = regularizer(variable)
            if penalty is not None:
                graph.add_to_collection(_fw.GraphKeys.REGULARIZATION_LOSSES, penalty)
        return variable

    add_variable = add_weight

    def add_loss(self, losses, inputs=None):
        """TF1's Layer.add_loss: the tensors go to the layer's losses and to
        REGULARIZATION_LOSSES (so get_regularization_loss counts them)."""
        self._add_to(_fw.GraphKeys.REGULARIZATION_LOSSES, losses, self._losses)

    def add_update(self, updates, inputs=None):
        """TF1's Layer.add_update: the ops go to the layer's updates and to UPDATE_OPS."""
        self._add_to(_fw.GraphKeys.UPDATE_OPS, updates, self._updates)

    def _add_to(self, key, values, own):
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        graph = self._building or self._calling or _fw.get_default_graph()
        for value in values:
            graph.add_to_collection(key, value)
        if self._calling is None and values:  # inside __call__ its collection diff counts
            own.extend(graph.get_collection(key)[-len(values):])

    def _build_ops(self, graph, x, *args, **kwargs):
        """Builds the layer's ops on x, in the current name and variable scope."""
        if not self._subclassed():
            raise NotImplementedError("%s must override call(inputs)" % type(self).__name__)
        return self.call(x, *args, **kwargs)

    def _after_build(self, graph):
        """What a layer adds once its variables exist (BatchNormalization's regularizers)."""

    def _var(self, short_name):
        for v in self._vars:
            if v.op.name.rsplit("/", 1)[-1] == short_name:
                return v
        return None

    def _kernel_initializer(self, init, what):
        """TF1's add_weight: no kernel_initializer means the variable scope's."""
        if init is None:
            from loom.compat.v1 import _variables
            init = _variables.get_variable_scope().initializer
        return _initializer(init, what)


def _snake_case(name):
    """TF's to_snake_case: "MyDense" -> "my_dense"."""
    import re
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return "private" + s if s.startswith("_") else s


def _ops(namespace=""):
    from loom.compat.v1 import _ops as ops
    return ops.NAMESPACES[namespace]


class _KernelBiasLayer(Layer):
    """What Dense and Conv2D share: a kernel and an optional bias, their initializers and
    regularizers, an activation and an activity regularizer."""

    def _keep_weight_args(self, activation, use_bias, kernel_initializer, bias_initializer,
                          kernel_regularizer, bias_regularizer, activity_regularizer,
                          kernel_constraint, bias_constraint):
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        for what, c in (("kernel_constraint", kernel_constraint),
                        ("bias_constraint", bias_constraint)):
            if c is not None and not callable(c):
                raise ValueError("The `%s` argument must be a callable." % what)
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint

    def _after_build(self, graph):
        # The optimizers project the variables after each update (TF1's constraints).
        from loom.compat.v1 import _variables
        _variables._set_constraint(self.kernel, self.kernel_constraint)
        if self.use_bias:
            _variables._set_constraint(self.bias, self.bias_constraint)

    @property
    def kernel(self):
        return self._var("kernel")

    @property
    def bias(self):
        return self._var("bias")


class Dense(_KernelBiasLayer):
    """tf.layers.Dense(units, activation=None, use_bias=True, kernel_initializer=None,
    bias_initializer=zeros, kernel_regularizer=None, bias_regularizer=None,
    activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
    trainable=True, name=None)."""

    _default_name = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units = int(units)
        self._keep_weight_args(activation, use_bias, kernel_initializer, bias_initializer,
                               kernel_regularizer, bias_regularizer, activity_regularizer,
                               kernel_constraint, bias_constraint)

    def _build_ops(self, graph, x):
        out = _loom.layers_dense(
            graph._g, graph.get_name_scope(), x._out, self.units, self.use_bias,
            self._kernel_initializer(self.kernel_initializer, "dense"),
            _initializer(self.bias_initializer, "dense"), self.trainable, "",
            _native_regularizer(graph, self.kernel_regularizer, "kernel_regularizer"),
            _native_regularizer(graph, self.bias_regularizer, "bias_regularizer"),
            self._variable_getter(graph))
        return _activity_regularize(graph, _activate(graph, out, self.activation),
                                    self.activity_regularizer)


class Conv2D(_KernelBiasLayer):
    """tf.layers.Conv2D(filters, kernel_size, strides=(1, 1), padding='valid',
    data_format='channels_last', dilation_rate=(1, 1), activation=None, use_bias=True,
    kernel_initializer=None, bias_initializer=zeros, kernel_regularizer=None,
    bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
    bias_constraint=None, trainable=True, name=None)."""

    _default_name = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        _check_format(data_format, "Conv2D")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.dilation_rate = _pair(dilation_rate)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size)
        self.strides = _pair(strides)
        self.padding = padding
        self._keep_weight_args(activation, use_bias, kernel_initializer, bias_initializer,
                               kernel_regularizer, bias_regularizer, activity_regularizer,
                               kernel_constraint, bias_constraint)

    def _build_ops(self, graph, x):
        out = _loom.layers_conv2d(
            graph._g, graph.get_name_scope(), x._out, self.filters, list(self.kernel_size),
            list(self.strides), self.padding, self.use_bias,
            self._kernel_initializer(self.kernel_initializer, "conv2d"),
            _initializer(self.bias_initializer, "conv2d"), self.trainable, "",
            _native_regularizer(graph, self.kernel_regularizer, "kernel_regularizer"),
            _native_regularizer(graph, self.bias_regularizer, "bias_regularizer"),
            self._variable_getter(graph), list(self.dilation_rate))
        return _activity_regularize(graph, _activate(graph, out, self.activation),
                                    self.activity_regularizer)


class SeparableConv2D(_KernelBiasLayer):
    """tf.layers.SeparableConv2D / tf.keras.layers.SeparableConv2D(filters, kernel_size,
    strides=(1, 1), padding='valid', data_format='channels_last', dilation_rate=(1, 1),
    depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer=None,
    pointwise_initializer=None, bias_initializer=zeros, depthwise_regularizer=None,
    pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
    depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
    trainable=True, name=None). Variables depthwise_kernel [kh, kw, in, depth_multiplier],
    pointwise_kernel [1, 1, in * depth_multiplier, filters], bias [filters]."""

    _default_name = "separable_conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=None, depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        _check_format(data_format, "SeparableConv2D")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size)
        self.strides = _pair(strides)
        self.padding = padding
        self.dilation_rate = _pair(dilation_rate)
        self.depth_multiplier = int(depth_multiplier)
        self._keep_weight_args(_activation_fn(activation, "SeparableConv2D"), use_bias,
                               depthwise_initializer, bias_initializer, depthwise_regularizer,
                               bias_regularizer, activity_regularizer, depthwise_constraint,
                               bias_constraint)
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        if pointwise_constraint is not None and not callable(pointwise_constraint):
            raise ValueError("The `pointwise_constraint` argument must be a callable.")
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint

    @property
    def depthwise_kernel(self):
        return self._var("depthwise_kernel")

    @property
    def pointwise_kernel(self):
        return self._var("pointwise_kernel")

    def _after_build(self, graph):
        from loom.compat.v1 import _variables
        _variables._set_constraint(self.depthwise_kernel, self.depthwise_constraint)
        _variables._set_constraint(self.pointwise_kernel, self.pointwise_constraint)
        if self.use_bias:
            _variables._set_constraint(self.bias, self.bias_constraint)

    def _build_ops(self, graph, x):
        what = "separable_conv2d"
        out = _loom.layers_separable_conv2d(
            graph._g, graph.get_name_scope(), x._out, self.filters, list(self.kernel_size),
            list(self.strides), self.padding, list(self.dilation_rate), self.depth_multiplier,
            self.use_bias, self._kernel_initializer(self.depthwise_initializer, what),
            self._kernel_initializer(self.pointwise_initializer, what),
            _initializer(self.bias_initializer, what),
            _native_regularizer(graph, self.depthwise_regularizer, "depthwise_regularizer"),
            _native_regularizer(graph, self.pointwise_regularizer, "pointwise_regularizer"),
            _native_regularizer(graph, self.bias_regularizer, "bias_regularizer"),
            self.trainable, "", self._variable_getter(graph))
        return _activity_regularize(graph, _activate(graph, out, self.activation),
                                    self.activity_regularizer)


class DepthwiseConv2D(_KernelBiasLayer):
    """tf.keras.layers.DepthwiseConv2D(kernel_size, strides=(1, 1), padding='valid',
    depth_multiplier=1, data_format=None, dilation_rate=(1, 1), activation=None,
    use_bias=True, depthwise_initializer='glorot_uniform', bias_initializer='zeros',
    depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
    depthwise_constraint=None, bias_constraint=None, trainable=True, name=None): output
    channel c * depth_multiplier + m from input channel c. Variables depthwise_kernel
    [kh, kw, in, depth_multiplier] and bias [in * depth_multiplier]."""

    _default_name = "depthwise_conv2d"

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        _check_format(data_format, "DepthwiseConv2D")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.kernel_size = _pair(kernel_size)
        self.strides = _pair(strides)
        self.padding = padding
        self.depth_multiplier = int(depth_multiplier)
        self.dilation_rate = _pair(dilation_rate)
        self._keep_weight_args(_activation_fn(activation, "DepthwiseConv2D"), use_bias,
                               depthwise_initializer, bias_initializer, depthwise_regularizer,
                               bias_regularizer, activity_regularizer, depthwise_constraint,
                               bias_constraint)

    @property
    def depthwise_kernel(self):
        return self._var("depthwise_kernel")

    @property
    def kernel(self):
        return self.depthwise_kernel

    def _build_ops(self, graph, x):
        what = "DepthwiseConv2D"
        out = _loom.layers_depthwise_conv2d(
            graph._g, graph.get_name_scope(), x._out, list(self.kernel_size),
            list(self.strides), self.padding, self.depth_multiplier, list(self.dilation_rate),
            self.use_bias, self._kernel_initializer(self.kernel_initializer, what),
            _initializer(self.bias_initializer, what),
            _native_regularizer(graph, self.kernel_regularizer, "depthwise_regularizer"),
            _native_regularizer(graph, self.bias_regularizer, "bias_regularizer"),
            self.trainable, "", self._variable_getter(graph))
        return _activity_regularize(graph, _activate(graph, out, self.activation),
                                    self.activity_regularizer)


class Conv2DTranspose(_KernelBiasLayer):
    """tf.layers.Conv2DTranspose / tf.keras.layers.Conv2DTranspose(filters, kernel_size,
    strides=(1, 1), padding='valid', output_padding=None, data_format='channels_last',
    dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
    bias_initializer=zeros, kernel_regularizer=None, bias_regularizer=None,
    activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True,
    name=None). The kernel is [kh, kw, filters, in_channels]; the output size per spatial dim
    is Keras' deconv_output_length (in * stride for 'same', in * stride + max(k - stride, 0)
    for 'valid', k the dilated span; with output_padding p, (in - 1) * stride + k - 2 * pad +
    p), taken from the input's shape at run time where it is unknown."""

    _default_name = "conv2d_transpose"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format="channels_last", dilation_rate=(1, 1),
                 activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        _check_format(data_format, "Conv2DTranspose")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size)
        self.strides = _pair(strides)
        self.padding = padding
        self.output_padding = None if output_padding is None else _pair(output_padding)
        self.dilation_rate = _pair(dilation_rate)
        self._keep_weight_args(_activation_fn(activation, "Conv2DTranspose"), use_bias,
                               kernel_initializer, bias_initializer, kernel_regularizer,
                               bias_regularizer, activity_regularizer, kernel_constraint,
                               bias_constraint)

    def _build_ops(self, graph, x):
        what = "conv2d_transpose"
        out = _loom.layers_conv2d_transpose(
            graph._g, graph.get_name_scope(), x._out, self.filters, list(self.kernel_size),
            list(self.strides), self.padding,
            None if self.output_padding is None else list(self.output_padding),
            list(self.dilation_rate), self.use_bias,
            self._kernel_initializer(self.kernel_initializer, what),
            _initializer(self.bias_initializer, what),
            _native_regularizer(graph, self.kernel_regularizer, "kernel_regularizer"),
            _native_regularizer(graph, self.bias_regularizer, "bias_regularizer"),
            self.trainable, "", self._variable_getter(graph))
        return _activity_regularize(graph, _activate(graph, out, self.activation),
                                    self.activity_regularizer)


SeparableConvolution2D = SeparableConv2D
Convolution2DTranspose = Conv2DTranspose


def _pair(value):
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    return value * 2 if len(value) == 1 else value


class _Pooling2D(Layer):
    _kind = None
    _scoped = False

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        _check_format(data_format, self._default_name)
        super().__init__(name=name, **kwargs)
        self.pool_size = _pair(pool_size)
        self.strides = _pair(strides)
        self.padding = padding

    def _build_ops(self, graph, x):
        return _pooling(self._kind, x, list(self.pool_size), list(self.strides), self.padding,
                        "channels_last", self._given_name)


class MaxPooling2D(_Pooling2D):
    """tf.layers.MaxPooling2D(pool_size, strides, padding='valid',
    data_format='channels_last', name=None)."""
    _default_name = "max_pooling2d"
    _kind = "max"


class AveragePooling2D(_Pooling2D):
    """tf.layers.AveragePooling2D (padding cells not counted, as TF)."""
    _default_name = "average_pooling2d"
    _kind = "average"


class Flatten(Layer):
    """tf.layers.Flatten(data_format=None)."""
    _default_name = "flatten"
    _scoped = False

    def __init__(self, data_format=None, name=None, **kwargs):
        _check_format(data_format, "Flatten")
        super().__init__(name=name, **kwargs)

    def _build_ops(self, graph, x):
        return flatten(x)


class Dropout(Layer):
    """tf.layers.Dropout(rate=0.5, noise_shape=None, seed=None, name=None); call it with
    training= a Python bool or a boolean tensor (default False: the identity)."""
    _default_name = "dropout"
    _scoped = False

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        _unsupported("Dropout", noise_shape=noise_shape)
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.seed = seed

    def _build_ops(self, graph, x, training=False):
        return dropout(x, rate=self.rate, seed=self.seed, training=training,
                       name=self._given_name)


class BatchNormalization(Layer):
    """tf.layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=1e-3, center=True,
    scale=True, beta_initializer=zeros, gamma_initializer=ones,
    moving_mean_initializer=zeros, moving_variance_initializer=ones,
    beta_regularizer=None, gamma_regularizer=None, ..., trainable=True, name=None); call
    it with training= a Python bool. In training the moving-statistics updates go to
    UPDATE_OPS (each call's own); training may be a bool tensor (then a tf.cond, and the
    updates assign only when it is true)."""
    _default_name = "batch_normalization"

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                 moving_variance_initializer=None, beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                 trainable=True, virtual_batch_size=None, adjustment=None, name=None,
                 **kwargs):
        _unsupported("BatchNormalization", beta_constraint=beta_constraint,
                     gamma_constraint=gamma_constraint, renorm_clipping=renorm_clipping,
                     virtual_batch_size=virtual_batch_size, adjustment=adjustment)
        if renorm:
            raise NotImplementedError("tf.layers.BatchNormalization: renorm is not supported")
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise NotImplementedError("tf.layers.BatchNormalization: one axis only")
            axis = axis[0]
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self._initializers = [_initializer(i, "batch_normalization") for i in (
            beta_initializer, gamma_initializer, moving_mean_initializer,
            moving_variance_initializer)]
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.fused = fused

    @property
    def gamma(self):
        return self._var("gamma")

    @property
    def beta(self):
        return self._var("beta")

    @property
    def moving_mean(self):
        return self._var("moving_mean")

    @property
    def moving_variance(self):
        return self._var("moving_variance")

    def _build_ops(self, graph, x, training=False):
        if isinstance(training, _fw.Tensor):
            from loom.compat.v1 import _ops as ops_module
            value = ops_module.constant_value(training)
            if value is not None:  # smart_cond: a constant picks when the graph is built
                training = bool(value)
            else:
                training = training._out
        elif not isinstance(training, bool):
            import numpy as np
            if not isinstance(training, np.bool_):
                raise TypeError("tf.layers.BatchNormalization: training must be a Python bool "
                                "or a bool tensor, got %r" % (training,))
            training = bool(training)
        rank = x.shape.ndims
        axis = self.axis % rank if rank else self.axis
        # TF1's fused kernel (its default for float32 4-D inputs with the channel on axis 1
        # or 3) moves the moving variance toward the unbiased batch variance.
        fused = (self.fused is not False and rank == 4 and axis in (1, 3)
                 and x.dtype.name == "float32")
        return graph._tensor(_loom.layers_batch_normalization(
            graph._g, graph.get_name_scope(), x._out, self.axis, self.momentum, self.epsilon,
            self.center, self.scale, training, self.trainable, "", *self._initializers,
            variable_getter=self._variable_getter(graph), unbiased_moving_variance=fused))

    def _after_build(self, graph):
        # The C++ layer takes no regularizers for gamma and beta: applied here, as TF does,
        # to the variables made now (not to reused ones).
        for short, regularizer in (("gamma", self.gamma_regularizer),
                                   ("beta", self.beta_regularizer)):
            variable = self._var(short)
            if regularizer is None or variable is None or variable.name not in self._created:
                continue
            with graph.name_scope(short + "_regularizer"):
                penalty = regularizer(variable)
            if penalty is not None:
                graph.add_to_collection(_fw.GraphKeys.REGULARIZATION_LOSSES, penalty)
