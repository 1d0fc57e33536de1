"""tf.train's checkpoint utilities (TF 1.15's checkpoint_utils.py) and
tf.train.ExponentialMovingAverage (moving_averages.py), over Loom's checkpoint reader
(python/src/bind_train_core.cc: a Loom checkpoint or a TF V2 bundle, a prefix or a
directory)."""
from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops
from loom.compat.v1 import _variables
from loom.compat.v1 import dtypes as _dtypes


class CheckpointReader:
    """What tf.train.load_checkpoint / tf.train.NewCheckpointReader return."""

    def __init__(self, filepattern):
        if not isinstance(filepattern, str):
            filepattern = filepattern.decode() if isinstance(filepattern, bytes) else str(filepattern)
        self._r = _loom.CheckpointReader(filepattern)

    def has_tensor(self, tensor_str):
        return self._r.has_tensor(tensor_str)

    def get_tensor(self, tensor_str):
        """The tensor's value as a numpy array; NotFoundError when absent."""
        return self._r.get_tensor(tensor_str)

    def get_variable_to_shape_map(self):
        return {n: list(self._r.shape(n)) for n in self._r.names()}

    def get_variable_to_dtype_map(self):
        return {n: _dtypes.as_dtype(self._r.dtype(n)) for n in self._r.names()}

    def debug_string(self):
        return "".join("%s (%s) %s\n" % (n, _dtypes.as_dtype(self._r.dtype(n)).name,
                                          list(self._r.shape(n))) for n in self._r.names()).encode()


def NewCheckpointReader(filepattern):  # noqa: N802 (TF's name)
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file):
    """tf.train.load_checkpoint: a reader of the checkpoint, or of a directory's newest."""
    try:
        return CheckpointReader(ckpt_dir_or_file)
    except _loom.NotFoundError as e:
        # TF 1.15 raises ValueError for a directory without a checkpoint.
        raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given directory "
                         "%s (%s)" % (ckpt_dir_or_file, e)) from None


def load_variable(ckpt_dir_or_file, name):
    """tf.train.load_variable: the tensor `name` (a trailing ':0' is dropped, as TF)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """tf.train.list_variables: [(name, shape)] sorted by name."""
    reader = load_checkpoint(ckpt_dir_or_file)
    shapes = reader.get_variable_to_shape_map()
    return [(n, shapes[n]) for n in sorted(shapes)]


def _variable_store(graph):
    """The graph's variables by name (TF's variable store holds get_variable's; Loom's
    also has tf.Variable's and those C++ builders made)."""
    store = {}
    for v in _variables.global_variables():
        store[v.op.name] = v
    return store


def _set_checkpoint_initializer(var, reader, tensor_name, ckpt):
    """Makes `var`'s initializer assign the checkpoint's `tensor_name` (TF's
    _set_checkpoint_initializer). The value is read now and kept in the graph as a
    constant "checkpoint_initializer" (TF reads the file when the initializer runs)."""
    want = reader.get_variable_to_shape_map()[tensor_name]
    if not var.shape.is_compatible_with(_fw.TensorShape(want)):
        raise ValueError("Shape of variable %s (%s) doesn't match with shape of tensor %s (%s) "
                         "from checkpoint reader." % (var.name, var.shape, tensor_name, want))
    dtype = reader.get_variable_to_dtype_map()[tensor_name]
    if dtype != var.dtype:
        raise ValueError("Dtype of variable %s (%s) doesn't match with dtype of tensor %s (%s) "
                         "in checkpoint %s." % (var.name, var.dtype.name, tensor_name,
                                                dtype.name, ckpt))
    graph = var.graph
    value = reader.get_tensor(tensor_name)
    with graph.as_default(), graph.control_dependencies(None), \
            graph.name_scope(var.op.name + "/"):
        const = _fw.constant(value, dtype=var.dtype, name="checkpoint_initializer")
        node = graph._g.add_node("Assign", graph.unique_name("Assign"),
                                 [var._out, const._out], {"_initializer": True}, [])
    graph._g.set_variable_initializer(var._out.node, node)
    var._initializer = graph._operation(node)
    var._initial_value = const


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """tf.train.init_from_checkpoint as TF 1.15: each variable the map names gets an
    initializer that assigns the checkpoint's tensor. Keys are checkpoint names (or
    'scope/'), values variable names, Variables (or 'scope/'): {'old/': 'new/'} maps every
    variable under new/ to the same name under old/, {'/': 'scope/'} adds no prefix.
    ValueError for a name not in the checkpoint, a shape mismatch, or a scope-only name
    mapped to a full one."""
    reader = load_checkpoint(ckpt_dir_or_file)
    variable_map = reader.get_variable_to_shape_map()
    graph = _fw.get_default_graph()
    store = _variable_store(graph)
    for tensor_name_in_ckpt, current in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        var = None
        if isinstance(current, _variables.Variable):
            var = current
        elif isinstance(current, (list, tuple)):
            raise NotImplementedError("init_from_checkpoint: partitioned variables (a list "
                                      "of Variables) are not supported")
        else:
            var = store.get(current)
        if var is not None:
            if tensor_name_in_ckpt not in variable_map:
                raise ValueError("Tensor %s is not found in %s checkpoint %s"
                                 % (tensor_name_in_ckpt, ckpt_dir_or_file, variable_map))
            _set_checkpoint_initializer(var, reader, tensor_name_in_ckpt, ckpt_dir_or_file)
            continue
        scopes = ""
        if "/" in current:
            scopes = current[:current.rindex("/")]
        if not tensor_name_in_ckpt.endswith("/"):
            raise ValueError("Assignment map with scope only name {} should map to scope only "
                             "{}. Should be 'scope/': 'other_scope/'.".format(
                                 scopes, tensor_name_in_ckpt))
        scope_variables = sorted(n for n in store if not scopes or n.startswith(scopes + "/"))
        for var_name in scope_variables:
            full_tensor_name = var_name[len(scopes):]
            if current != "/":
                full_tensor_name = full_tensor_name[1:]
            if tensor_name_in_ckpt != "/":
                full_tensor_name = tensor_name_in_ckpt + full_tensor_name
            if full_tensor_name.endswith("/"):
                full_tensor_name = full_tensor_name[:-1]
            if full_tensor_name not in variable_map:
                raise ValueError("Tensor %s (%s in %s) is not found in %s checkpoint"
                                 % (full_tensor_name, var_name[len(scopes) + 1:],
                                    tensor_name_in_ckpt, ckpt_dir_or_file))
            _set_checkpoint_initializer(store[var_name], reader, full_tensor_name,
                                        ckpt_dir_or_file)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """tf.train.assign_moving_average: variable -= (variable - value) * (1 - decay).
    zero_debias (TF's default here, unlike ExponentialMovingAverage's) is not supported."""
    if zero_debias:
        raise NotImplementedError("assign_moving_average(zero_debias=True) is not supported; "
                                  "pass zero_debias=False")
    graph = variable.graph
    with graph.as_default(), graph.name_scope(name or "AssignMovingAvg"):
        one_minus = _ops.NAMESPACES[""]["subtract"](1.0, _fw.convert_to_tensor(decay),
                                                    name="decay")
        if one_minus.dtype != variable.dtype:
            one_minus = _ops.NAMESPACES[""]["cast"](one_minus, variable.dtype)
        delta = _ops.NAMESPACES[""]["multiply"](
            _ops.NAMESPACES[""]["subtract"](variable, value), one_minus)
        return _ops.raw_ops.AssignSub(variable, delta, name="AssignMovingAvg")


class ExponentialMovingAverage:
    """tf.train.ExponentialMovingAverage as TF 1.15: apply() makes, per variable, a
    non-trainable shadow "<var>/<name>" starting at the variable's initialized value, and
    returns an op that moves each shadow: shadow -= (shadow - var) * (1 - decay), with decay
    min(decay, (1 + num_updates) / (10 + num_updates)) when num_updates is given; a second
    apply of a variable is TF's ValueError. The
    shadows of Variables start at their value; zero_debias applies to shadows of tensors
    only, and is not supported."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if zero_debias:
            raise NotImplementedError("ExponentialMovingAverage(zero_debias=True) is not "
                                      "supported")
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages = {}  # id(var) -> (var, shadow)

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        if var_list is None:
            var_list = _variables.trainable_variables()
        var_list = list(var_list)
        graph = _fw.get_default_graph()
        for var in var_list:
            if var.dtype not in (_dtypes.float32, _dtypes.float64):
                raise TypeError("The variables must be half, float, or double: %s" % var.name)
            if id(var) in self._averages:
                raise ValueError("Moving average already computed for: %s" % var.name)
            if not isinstance(var, _variables.Variable):
                raise NotImplementedError(
                    "ExponentialMovingAverage.apply: %s is a tensor, not a Variable; Loom "
                    "averages Variables only" % var.name)
            init = var.initializer

            def initial(var=var, init=init):
                # The variable's value once initialized (TF's initialized_value): read
                # after its initializer, not its initial-value op run again (a random one
                # would draw new numbers).
                with graph.control_dependencies([init]):
                    return _ops.NAMESPACES[""]["identity"](var)

            with graph.name_scope(""):
                avg = _variables.Variable(initial, trainable=False,
                                          name=var.op.name + "/" + self._name)
            graph.add_to_collection(_fw.GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            self._averages[id(var)] = (var, avg)
        with graph.name_scope(self._name) as scope:
            decay = _fw.convert_to_tensor(self._decay, dtype=_dtypes.float32, name="decay") \
                if not isinstance(self._decay, _fw.Tensor) else self._decay
            if self._num_updates is not None:
                n = _ops.NAMESPACES[""]["cast"](self._num_updates, _dtypes.float32,
                                                name="num_updates")
                decay = _ops.NAMESPACES[""]["minimum"](
                    decay, _ops.NAMESPACES[""]["truediv"](
                        _ops.NAMESPACES[""]["add"](1.0, n),
                        _ops.NAMESPACES[""]["add"](10.0, n)))
            updates = []
            for var in var_list:
                avg = self._averages[id(var)][1]
                updates.append(assign_moving_average(avg, var, decay, zero_debias=False))
            return _variables.group(*updates, name=scope[:-1] if scope else None)

    def average(self, var):
        entry = self._averages.get(id(var))
        return entry[1] if entry is not None else None

    def average_name(self, var):
        return var.op.name + "/" + self._name

    def variables_to_restore(self, moving_avg_variables=None):
        """{name in a checkpoint: variable}: each averaged variable restored from its
        average's name, every other global variable from its own."""
        name_map = {}
        if moving_avg_variables is None:
            moving_avg_variables = _variables.trainable_variables()
            moving_avg_variables += _fw.get_collection(_fw.GraphKeys.MOVING_AVERAGE_VARIABLES)
        unique = {id(v): v for v in moving_avg_variables}
        for v in unique.values():
            name_map[self.average_name(v)] = v
        names = {v.name for v in unique.values()}
        for v in _variables.global_variables():
            if v.name not in names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
