"""tf.Variable, tf.get_variable with variable scopes, the initializers, and the variable
collections. A Variable is a Tensor (its VariableV2 node's output, the current value)
with an initializer op: an Assign marked `_initializer`, which is how the C++ side's
GlobalVariablesInitializer and Savers know it."""
import contextlib
import functools
import math

import numpy as np

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops
from loom.compat.v1 import dtypes as _dtypes


class Variable(_fw.Tensor):
    """tf.Variable(initial_value, trainable=True, collections=None, validate_shape=True,
    caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
    import_scope=None, constraint=None, use_resource=None, synchronization=None,
    aggregation=None, shape=None)."""
    __slots__ = ("_initializer", "_initial_value", "_save_slice_info")

    def __init__(self, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, shape=None,
                 _local=False):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        graph = _fw.get_default_graph()
        if collections is not None and _fw.GraphKeys.LOCAL_VARIABLES in collections:
            _local = True
            trainable = False
        var_name = graph.unique_name(name or "Variable")
        with graph.control_dependencies(None), graph.name_scope(var_name + "/"):
            if callable(initial_value):
                initial_value = initial_value()
            init = _fw.convert_to_tensor(initial_value, dtype=dtype, name="initial_value") \
                if not isinstance(initial_value, _fw.Tensor) else initial_value
            if dtype is not None and init.dtype != _dtypes.as_dtype(dtype):
                init = _ops.NAMESPACES[""]["cast"](init, dtype)
        if init._out.node.in_cond_branch:
            raise ValueError(
                "Initializer for variable %s is from inside a control-flow construct, such as "
                "a loop or conditional. When creating a variable inside a loop or "
                "conditional, use a lambda as the initializer." % var_name)
        static = shape if shape is not None else init.shape
        if not _fw.TensorShape(static).is_fully_defined():
            if validate_shape:
                raise ValueError("initial_value must have a shape specified: %s" % init)
        attrs = {"dtype": init.dtype._enum, "shape": _fw.TensorShape(static).dims,
                 "trainable": bool(trainable) and not _local, "local": bool(_local)}
        with graph.control_dependencies(None):
            node = graph._g.add_node("VariableV2", var_name, [], attrs, [])
            assign = graph._g.add_node("Assign", graph._g.unique_name(var_name + "/Assign"),
                                       [node.output(0), init._out], {"_initializer": True}, [])
            # The C++ initializers (GlobalVariablesInitializer) and Savers read the graph's
            # variables collections, as the C++ Variable registers itself.
            graph._g.add_to_collection("local_variables" if _local else "variables", "variable",
                                       node, 0, assign)
        _fw.Tensor.__init__(self, graph, node.output(0))
        _set_constraint(self, constraint)
        self._initializer = graph._operation(assign)
        self._initial_value = init
        graph._py_variables[var_name] = self
        graph._wrapped_tensors[(node.id, 0)] = self
        for c in collections or ():
            if c not in (_fw.GraphKeys.GLOBAL_VARIABLES, _fw.GraphKeys.TRAINABLE_VARIABLES,
                         _fw.GraphKeys.LOCAL_VARIABLES):
                graph.add_to_collection(c, self)

    @classmethod
    def _from_node(cls, graph, node):
        """The Variable of a variable node the C++ side made (optimizer slots, the global
        step, layers)."""
        self = cls.__new__(cls)
        _fw.Tensor.__init__(self, graph, node.output(0))
        self._initializer = None
        self._initial_value = None
        graph._py_variables[node.name] = self
        graph._wrapped_tensors[(node.id, 0)] = self
        return self

    @property
    def initializer(self):
        if self._initializer is None:
            for op in self._graph.get_operations():
                if op.type == "Assign" and op._node.attrs.get("_initializer") and \
                        op._node.inputs[0].node == self._out.node:
                    self._initializer = op
                    break
        return self._initializer

    @property
    def initial_value(self):
        if self._initial_value is None and self.initializer is not None:
            self._initial_value = self.initializer.inputs[1]
        return self._initial_value

    @property
    def constraint(self):
        """The projection the optimizers apply after each update (TF1's Variable
        constraint), or None."""
        return self._graph.__dict__.get("_constraints", {}).get(self._out.node.name)

    @property
    def trainable(self):
        return bool(self._out.node.attrs.get("trainable", False))

    def value(self):
        return self

    def read_value(self):
        return _ops.NAMESPACES[""]["identity"](self, name="read")

    def _as_tensor(self):
        return self

    def _as_graph_element(self):
        return self

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return _ops.raw_ops.Assign(self, value, name=name or "Assign")

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return _ops.raw_ops.AssignAdd(self, delta, name=name or "AssignAdd")

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return _ops.raw_ops.AssignSub(self, delta, name=name or "AssignSub")

    def load(self, value, session=None):
        from loom.compat.v1._session import _session_for
        sess = _session_for(self._graph, session)
        with self._graph.as_default():
            ph = _fw.placeholder(self.dtype, self.shape, name=self._out.node.name + "/load")
            op = _ops.raw_ops.Assign(self, ph)
        sess.run(op, {ph: value})

    def eval(self, session=None):
        return _fw.Tensor.eval(self, session=session)

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s_ref>" % (self.name, self.shape,
                                                          self.dtype.name)


def _wrap_variable(graph, node):
    v = graph._py_variables.get(node.name)
    return v if v is not None else Variable._from_node(graph, node)


def global_variables(scope=None):
    return _fw.get_collection(_fw.GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return _fw.get_collection(_fw.GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None):
    return _fw.get_collection(_fw.GraphKeys.LOCAL_VARIABLES, scope)


def moving_average_variables(scope=None):
    return _fw.get_collection(_fw.GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def model_variables(scope=None):
    return _fw.get_collection(_fw.GraphKeys.MODEL_VARIABLES, scope)


def global_variables_initializer():
    graph = _fw.get_default_graph()
    return graph._operation(_loom.global_variables_initializer(graph._g, graph.get_name_scope()))


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    graph = _fw.get_default_graph()
    return graph._operation(_loom.local_variables_initializer(graph._g, graph.get_name_scope()))


def variables_initializer(var_list, name="init"):
    return group(*[v.initializer for v in var_list], name=name)


def _set_constraint(var, constraint):
    """Records `constraint` (a function of the variable's value giving its projected
    value) for `var`; the graph keeps it by variable name, so every Variable object of the
    node (the C++ layers' variables are wrapped on demand) sees it."""
    if constraint is None:
        return
    if not callable(constraint):
        raise ValueError("The `constraint` argument must be a callable.")
    var.graph.__dict__.setdefault("_constraints", {})[var._out.node.name] = constraint


def _apply_constraints(update_op, variables):
    """TF1's optimizers: after `update_op`, each of `variables` with a constraint is
    assigned constraint(its updated value). Returns the op that does both (update_op
    itself when none has a constraint)."""
    constrained = [v for v in variables if v is not None and v.constraint is not None]
    if not constrained:
        return update_op
    graph = update_op.graph
    assigns = []
    with graph.as_default(), graph.control_dependencies([update_op]):
        for v in constrained:
            with graph.name_scope(v.op.name + "/Constraint"):
                # A variable node's output is its value when the node runs, which may be
                # before the update; AssignAdd of 0 reads it through the variable itself,
                # after the update (it runs under the control dependency).
                updated = _ops.raw_ops.AssignAdd(v, _fw.constant(0, dtype=v.dtype),
                                                 name="read_updated")
                assigns.append(_ops.raw_ops.Assign(v, v.constraint(updated), name="Assign"))
        return group(update_op, *assigns)


def group(*inputs, name=None):
    """tf.group: a NoOp that runs after `inputs` (and, inside tf.control_dependencies,
    after those too, as every op built there: Graph::AddNode adds them)."""
    graph = _fw.get_default_graph()
    nodes = [_fw._as_operation(graph, i)._node for i in inputs]
    return graph._operation(_loom.group(graph._g, graph.get_name_scope(), nodes))


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return _ops.raw_ops.Assign(ref, value, name=name or "Assign")


def assign_add(ref, value, use_locking=None, name=None):
    return _ops.raw_ops.AssignAdd(ref, value, name=name or "AssignAdd")


def assign_sub(ref, value, use_locking=None, name=None):
    return _ops.raw_ops.AssignSub(ref, value, name=name or "AssignSub")


# --- initializers -------------------------------------------------------------------------
class Initializer:
    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError


class zeros_initializer(Initializer):
    def __init__(self, dtype=_dtypes.float32):
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.zeros(shape, dtype or self.dtype)


class ones_initializer(Initializer):
    def __init__(self, dtype=_dtypes.float32):
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.ones(shape, dtype or self.dtype)


class constant_initializer(Initializer):
    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape=False):
        self.value = value
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _fw.constant(self.value, dtype=dtype or self.dtype, shape=shape)


class random_normal_initializer(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.NAMESPACES[""]["random_normal"](shape, self.mean, self.stddev,
                                                    dtype or self.dtype, self.seed)


class truncated_normal_initializer(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.NAMESPACES[""]["truncated_normal"](shape, self.mean, self.stddev,
                                                       dtype or self.dtype, self.seed)


class random_uniform_initializer(Initializer):
    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dtypes.float32):
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.NAMESPACES[""]["random_uniform"](shape, self.minval,
                                                     1.0 if self.maxval is None else self.maxval,
                                                     dtype or self.dtype, self.seed)


class variance_scaling_initializer(Initializer):
    """tf.variance_scaling_initializer with TF1's fan computation."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=_dtypes.float32):
        self.scale, self.mode, self.distribution = scale, mode, distribution
        self.seed, self.dtype = seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = list(shape)
        if len(shape) < 1:
            fan_in = fan_out = 1.0
        elif len(shape) == 1:
            fan_in = fan_out = float(shape[0])
        elif len(shape) == 2:
            fan_in, fan_out = float(shape[0]), float(shape[1])
        else:
            receptive = float(np.prod(shape[:-2]))
            fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        dtype = dtype or self.dtype
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / 0.87962566103423978
            return _ops.NAMESPACES[""]["truncated_normal"](shape, 0.0, stddev, dtype, self.seed)
        if self.distribution == "untruncated_normal":
            return _ops.NAMESPACES[""]["random_normal"](shape, 0.0, math.sqrt(scale), dtype, self.seed)
        limit = math.sqrt(3.0 * scale)
        return _ops.NAMESPACES[""]["random_uniform"](shape, -limit, limit, dtype, self.seed)


def glorot_uniform_initializer(seed=None, dtype=_dtypes.float32):
    return variance_scaling_initializer(1.0, "fan_avg", "uniform", seed, dtype)


def glorot_normal_initializer(seed=None, dtype=_dtypes.float32):
    return variance_scaling_initializer(1.0, "fan_avg", "truncated_normal", seed, dtype)


def he_normal(seed=None):
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


# --- variable scopes and get_variable -----------------------------------------------------
AUTO_REUSE = "AUTO_REUSE"


class VariableScope:
    """tf.VariableScope: a variable-name prefix with its reuse mode, default initializer,
    regularizer and dtype. original_name_scope is the name scope opened when the scope
    was first entered ("foo/vs/"): tf.layers build their ops there on every call."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None, dtype=None,
                 original_name_scope=None):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.dtype = dtype
        self.original_name_scope = (original_name_scope if original_name_scope is not None
                                    else (name + "/" if name else ""))

    def reuse_variables(self):
        self.reuse = True

    def set_initializer(self, initializer):
        self.initializer = initializer

    def set_regularizer(self, regularizer):
        self.regularizer = regularizer

    def set_dtype(self, dtype):
        self.dtype = dtype

    def get_variable(self, name, *args, **kwargs):
        return get_variable(name, *args, **kwargs)

    def __repr__(self):
        return "<tf.VariableScope '%s' reuse=%s>" % (self.name, self.reuse)


def _scope_stack(graph):
    return graph._variable_scope_stack


def _root_scope(graph):
    root = graph.__dict__.get("_root_variable_scope")
    if root is None:
        root = graph._root_variable_scope = VariableScope(False)
    return root


def get_variable_scope():
    graph = _fw.get_default_graph()
    stack = _scope_stack(graph)
    return stack[-1] if stack else _root_scope(graph)


def _unique_scope_name(counts, parent, prefix):
    """TF's _get_unique_variable_scope: prefix, or prefix_1, prefix_2, ... whichever has
    not been opened yet inside the current variable scope."""
    full = parent.name + "/" + prefix if parent.name else prefix
    if not counts.get(full):
        return prefix
    idx = 1
    while counts.get("%s_%d" % (full, idx)):
        idx += 1
    return "%s_%d" % (prefix, idx)


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """tf.variable_scope, with TF1's rules: variables are named "<scope>/<name>" (name
    scopes never change them); a name opens that scope exactly, default_name one made
    unique inside the current variable scope ("dense", "dense_1"; the count of a scope's
    sub-scopes restarts each time the scope is left, so re-entering "model" gives
    "model/dense" again); a VariableScope object re-enters it. The name scope opened
    beside it is made unique as tf.name_scope's ("model_1" the second time).
    reuse=True / tf.AUTO_REUSE is inherited by sub-scopes and cannot be turned off."""
    if name_or_scope is None and default_name is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    if name_or_scope is not None and not isinstance(name_or_scope, (VariableScope, str)):
        raise TypeError("VariableScope: name_or_scope must be a string or VariableScope, "
                        "got %r" % (name_or_scope,))
    if name_or_scope is None and reuse:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    graph = _fw.get_default_graph() if not values else _fw._graph_of(values)
    stack = _scope_stack(graph)
    parent = stack[-1] if stack else _root_scope(graph)
    counts = graph._scope_counts
    reuse = reuse or None  # reuse=False is "inherit", as TF1's
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        name_scope = full.split("/")[-1]
        inherit = name_or_scope
        new_reuse = reuse or name_or_scope.reuse
    else:
        base = name_or_scope if name_or_scope is not None else \
            _unique_scope_name(counts, parent, default_name)
        full = parent.name + "/" + base if parent.name else base
        name_scope = name_or_scope if name_or_scope is not None else default_name
        inherit = parent
        new_reuse = reuse or parent.reuse
    if not auxiliary_name_scope:
        current = graph.get_name_scope()
        ns_context = graph.name_scope(current + "/" if current else None)
    elif name_scope:
        ns_context = graph.name_scope(name_scope)
    else:
        ns_context = contextlib.nullcontext(
            graph.get_name_scope() + "/" if graph.get_name_scope() else "")
    with ns_context as ns:
        if isinstance(name_or_scope, VariableScope):
            original = name_or_scope.original_name_scope
        else:
            original = ns
        scope = VariableScope(new_reuse, full,
                              initializer=initializer or inherit.initializer,
                              regularizer=regularizer or inherit.regularizer,
                              dtype=dtype or inherit.dtype, original_name_scope=original)
        counts[full] = counts.get(full, 0) + 1
        saved = dict(counts) if isinstance(name_or_scope, VariableScope) else None
        stack.append(scope)
        try:
            yield scope
        finally:
            stack.pop()
            if saved is not None:
                graph._scope_counts = saved
            else:
                counts = graph._scope_counts  # a nested scope object's exit replaces it
                for key in counts:
                    if key.startswith(full + "/"):
                        counts[key] = 0


def _stored_variable(graph, scope, full, shape):
    """The variable `full` made before, checked against scope's reuse mode (as TF1's
    variable store: an existing one needs reuse, a missing one needs no reuse=True), or
    None when it is to be made."""
    store = graph.__dict__.setdefault("_variable_store", {})
    existing = store.get(full)
    if existing is not None:
        if not scope.reuse:
            raise ValueError("Variable %s already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?" % full)
        if shape is not None and not existing.shape.is_compatible_with(shape):
            raise ValueError("Trying to share variable %s, but specified shape %s and found "
                             "shape %s." % (full, _fw.TensorShape(shape), existing.shape))
        return existing
    if scope.reuse is True:
        raise ValueError("Variable %s does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "VarScope?" % full)
    return None


def _store_variable(graph, full, var):
    if var.name != full + ":0":
        raise ValueError("Variable %s cannot be made: the name is used by another node (%s)"
                         % (full, var.name))
    graph.__dict__.setdefault("_variable_store", {})[full] = var


def _regularize(graph, full, var, regularizer):
    """tf.get_variable's regularizer on a variable it made: the penalty, under
    "<variable>/Regularizer/", joins REGULARIZATION_LOSSES (a None penalty adds nothing)."""
    if regularizer is None:
        return
    with graph.name_scope(full + "/Regularizer/"):
        loss = regularizer(var)
    if loss is not None:
        graph.add_to_collection(_fw.GraphKeys.REGULARIZATION_LOSSES, loss)


def _layer_variable(graph, short_name, shape, make):
    """A tf.layers variable, as TF1's Layer.add_weight gets it through tf.get_variable:
    "<current variable scope>/<short_name>", shared under reuse. `make(variable_scope)`
    builds a new one (the C++ layer's own initializer and regularizer); the variable
    scope's regularizer applies to it too, as get_variable's does. Returns (variable,
    whether it was made now)."""
    scope = get_variable_scope()
    full = scope.name + "/" + short_name if scope.name else short_name
    existing = _stored_variable(graph, scope, full, shape)
    if existing is not None:
        return existing, False
    var = graph._tensor(make(scope.name))
    _store_variable(graph, full, var)
    _regularize(graph, full, var, scope.regularizer)
    return var, True


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """tf.get_variable: the variable "<variable scope>/<name>", made on first use."""
    graph = _fw.get_default_graph()
    scope = get_variable_scope()
    full = scope.name + "/" + name if scope.name else name
    existing = _stored_variable(graph, scope, full, shape)
    if existing is not None:
        return existing
    requested = dtype
    dtype = _dtypes.as_dtype(dtype or scope.dtype or _dtypes.float32)
    initializer = initializer if initializer is not None else scope.initializer
    if initializer is None:
        initializer = glorot_uniform_initializer() if dtype.is_floating else zeros_initializer()
    if isinstance(initializer, type):
        initializer = initializer()
    if callable(initializer):
        if shape is None:
            raise ValueError("The shape of variable %s must be specified" % full)
        shape = _fw.TensorShape(shape).as_list()

        def init_value():
            try:
                return initializer(shape, dtype=dtype, partition_info=None)
            except TypeError:
                return initializer(shape, dtype=dtype)
    else:
        init_value = initializer  # a Tensor or a value
        if requested is None:
            # TF 1.15 (variable_dtype = None when initializing from a value): the value's
            # own dtype, a numpy float64 array a float64 variable, an int64 one int64; it
            # was cast to float32 (or the scope's dtype) silently.
            dtype = None
    if trainable is None:
        trainable = True
    with graph.name_scope(None):
        var = Variable(init_value, trainable=trainable, name=full, dtype=dtype,
                       collections=collections, validate_shape=validate_shape,
                       constraint=constraint)
    _store_variable(graph, full, var)
    _regularize(graph, full, var, regularizer if regularizer is not None else scope.regularizer)
    return var


class Template:
    """tf.make_template's result: `func` called in one variable scope, made on the first
    call (or at construction with create_scope_now_), whose variables every later call
    shares (reuse=True); a later call that would make a new trainable variable is TF1's
    ValueError."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None, **kwargs):
        if not name:
            raise ValueError("name cannot be None.")
        if custom_getter is not None:
            raise NotImplementedError("tf.make_template: custom_getter_ is not supported "
                                      "(Loom's variable scopes have no custom getters)")
        self._name = name
        self._unique_name = unique_name
        self._func = functools.partial(func, **kwargs) if kwargs else func
        self._variable_scope = None
        self._variables_created = False
        if create_scope_now:
            with variable_scope(unique_name, name) as vs:
                self._variable_scope = vs

    def __call__(self, *args, **kwargs):
        if self._variable_scope is None:
            with variable_scope(self._unique_name, self._name) as vs:
                self._variable_scope = vs
                return self._call_func(args, kwargs)
        with variable_scope(self._variable_scope, reuse=True if self._variables_created
                            else None):
            return self._call_func(args, kwargs)

    def _call_func(self, args, kwargs):
        graph = _fw.get_default_graph()
        key = _fw.GraphKeys.TRAINABLE_VARIABLES
        before = len(graph.get_collection(key))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            made = graph.get_collection(key)[before:]
            if made:
                raise ValueError("Trainable variable created when calling a template after "
                                 "the first time, perhaps you used tf.Variable when you "
                                 "meant tf.get_variable: %s" % ([v.name for v in made],))
        self._variables_created = True
        return result

    @property
    def name(self):
        return self._name

    @property
    def variable_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self):
        return None if self._variable_scope is None else self._variable_scope.name

    def _scoped(self, key):
        if self._variable_scope is None:
            return []
        prefix = self._variable_scope.name + "/"
        return [v for v in _fw.get_default_graph().get_collection(key)
                if v.name.startswith(prefix)]

    @property
    def variables(self):
        return self._scoped(_fw.GraphKeys.GLOBAL_VARIABLES)

    global_variables = variables

    @property
    def trainable_variables(self):
        return self._scoped(_fw.GraphKeys.TRAINABLE_VARIABLES)


def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs):
    """tf.make_template: func_ wrapped so that every call shares the variables of the
    first (see Template)."""
    return Template(name_, func_, create_scope_now=create_scope_now_,
                    unique_name=unique_name_, custom_getter=custom_getter_, **kwargs)
