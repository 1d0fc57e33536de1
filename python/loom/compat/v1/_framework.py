"""The graph-building core of loom.compat.v1: Graph (with the default-graph stack, name
scopes, control dependencies and collections), Tensor, Operation, TensorShape, constant,
placeholder and convert_to_tensor. TF1 keeps a default graph in a global; Loom's C++ Graph
has none, so the stack lives here, as it does in TF's Python layer."""
import contextlib
import numbers
import threading

import numpy as np

from loom import _loom
from loom.compat.v1 import dtypes as _dtypes


class GraphKeys:
    """tf.GraphKeys. UPDATE_OPS, REGULARIZATION_LOSSES and GLOBAL_STEP are the C++ graph's
    typed collections (loom/graph/collections.h), so C++ layers and Python code see the
    same lists; GLOBAL_VARIABLES, TRAINABLE_VARIABLES and LOCAL_VARIABLES are the graph's
    variables; the others are kept by the Python Graph."""
    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    METRIC_VARIABLES = "metric_variables"


# The collections the C++ graph holds, with the kind of their items.
_NATIVE_COLLECTIONS = {
    GraphKeys.UPDATE_OPS: "operation",
    GraphKeys.REGULARIZATION_LOSSES: "output",
    GraphKeys.GLOBAL_STEP: "variable",
}


class Dimension:
    """tf.Dimension: a dimension size or None."""
    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = None if value is None else int(value)

    @property
    def value(self):
        return self._value

    def __int__(self):
        return self._value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return self._value == other

    def __hash__(self):
        return hash(self._value)

    # TF 1.15's arithmetic: an unknown operand gives an unknown Dimension; `/` is a
    # TypeError (use //); a Tensor operand is left to the Tensor's operator.
    def _binary(self, other, fn):
        if other is None or isinstance(other, (bool, numbers.Integral)):
            other = Dimension(other)
        elif not isinstance(other, Dimension):
            return NotImplemented
        if self._value is None or other._value is None:
            return Dimension(None)
        return Dimension(fn(self._value, other._value))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: b * a)

    def __floordiv__(self, other):
        return self._binary(other, lambda a, b: a // b)

    def __rfloordiv__(self, other):
        return self._binary(other, lambda a, b: b // a)

    def __mod__(self, other):
        return self._binary(other, lambda a, b: a % b)

    def __rmod__(self, other):
        return self._binary(other, lambda a, b: b % a)

    def __truediv__(self, other):
        raise TypeError("unsupported operand type(s) for /: 'Dimension' and '%s', please use "
                        "// instead" % type(other).__name__)

    def _compare(self, other, fn):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return fn(self._value, other)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)

    def __repr__(self):
        return "Dimension(%r)" % self._value

    def __str__(self):
        return "?" if self._value is None else str(self._value)


class TensorShape:
    """tf.TensorShape: a partial shape. `dims` is None for an unknown rank."""

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims.dims
        if dims is None:
            self._dims = None
        elif isinstance(dims, (int, np.integer)):
            self._dims = [int(dims)]
        else:
            self._dims = [None if (d is None or (isinstance(d, Dimension) and d.value is None))
                          else int(d) for d in dims]

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def is_compatible_with(self, other):
        other = TensorShape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = TensorShape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are not compatible" % (self, other))
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other):
        try:
            other = TensorShape(other)
        except TypeError:
            return NotImplemented
        return self._dims == other._dims

    def __repr__(self):
        return "TensorShape(%r)" % (self._dims,)

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        return "(" + ", ".join("?" if d is None else str(d) for d in self._dims) + \
            ("," if len(self._dims) == 1 else "") + ")"


def _as_shape(shape):
    if shape is None:
        return None
    return TensorShape(shape).dims


class Operation:
    """tf.Operation: a node of a Graph."""
    __slots__ = ("_graph", "_node", "__weakref__")

    def __init__(self, graph, node):
        self._graph = graph
        self._node = node

    @property
    def name(self):
        return self._node.name

    @property
    def type(self):
        return self._node.op

    @property
    def graph(self):
        return self._graph

    @property
    def inputs(self):
        return [self._graph._tensor(o) for o in self._node.inputs]

    @property
    def outputs(self):
        return [self._graph._tensor(self._node.output(i)) for i in range(self._node.num_outputs)]

    @property
    def control_inputs(self):
        return [self._graph._operation(n) for n in self._node.control_inputs]

    @property
    def device(self):
        return ""

    def get_attr(self, name):
        attrs = self._node.attrs
        if name not in attrs:
            raise ValueError("Operation '%s' has no attr named '%s'" % (self.name, name))
        value = attrs[name]
        return _dtypes.as_dtype(value) if isinstance(value, _loom.DType) else value

    def run(self, feed_dict=None, session=None):
        from loom.compat.v1._session import _session_for
        _session_for(self._graph, session).run(self, feed_dict)

    def __eq__(self, other):
        return isinstance(other, Operation) and self._node == other._node

    def __hash__(self):
        return hash(self._node)

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self.name, self.type)


class Tensor:
    """tf.Tensor: one output of an Operation. Arithmetic operators, comparisons and
    slicing build ops (the operator table is in _ops.py)."""
    # _fed: the output a feed of this Tensor goes to, once set_shape has moved _out to
    # an EnsureShape node (the original output, which the earlier consumers read).
    __slots__ = ("_graph", "_out", "_fed", "__weakref__")
    # numpy defers to our operators (np_array + tensor builds an Add).
    __array_priority__ = 100

    def __init__(self, graph, out):
        self._graph = graph
        self._out = out

    @property
    def name(self):
        return self._out.name

    @property
    def dtype(self):
        return _dtypes.as_dtype(self._out.dtype)

    @property
    def shape(self):
        return TensorShape(self._out.shape)

    def get_shape(self):
        return self.shape

    @property
    def op(self):
        return self._graph._operation(self._out.node)

    @property
    def graph(self):
        return self._graph

    @property
    def value_index(self):
        return self._out.index

    @property
    def device(self):
        return ""

    def consumers(self):
        out = []
        for i in range(self._graph._g.num_nodes):
            node = self._graph._g.node(i)
            if any(inp == self._out for inp in node.inputs):
                out.append(self._graph._operation(node))
        return out

    def set_shape(self, shape):
        """Refines the static shape, as TF's set_shape. A Loom node's shapes are fixed
        when it is added, so a shape that says more than the current one adds an
        EnsureShape node (which also checks the value's shape at run time) and this
        Tensor, the one object the graph hands out for the output, becomes its output:
        its name becomes "<op>/set_shape:0"; fetching the old name gives the same value. A
        feed of this Tensor still goes to the original output (ops built before set_shape
        read it), and the EnsureShape node checks the fed value's shape."""
        shape = TensorShape(shape)
        if not self.shape.is_compatible_with(shape):
            raise ValueError("Tensor %s has shape %s, incompatible with %s" %
                             (self.name, self.shape, shape))
        merged = self.shape.merge_with(shape)
        g = self._graph._g
        # A finalized graph takes no node: there the shape is only checked (as before).
        if merged.dims == self.shape.dims or g.finalized:
            return
        node = g.add_node("EnsureShape", g.unique_name(self._out.node.name + "/set_shape"),
                          [self._out], {"shape": merged.dims}, [])
        if getattr(self, "_fed", None) is None:
            self._fed = self._out
        self._out = node.output(0)
        self._graph._wrapped_tensors[(node.id, 0)] = self

    @property
    def _feed_out(self):
        fed = getattr(self, "_fed", None)
        return self._out if fed is None else fed

    def eval(self, feed_dict=None, session=None):
        from loom.compat.v1._session import _session_for
        return _session_for(self._graph, session).run(self, feed_dict)

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise TypeError("Using a tf.Tensor as a Python bool is not allowed; use tf.cond or "
                        "run it in a Session first")

    def __iter__(self):
        raise TypeError("Tensor objects are only iterable when eager execution is enabled; "
                        "index it (t[i]) or use tf.unstack")

    def __len__(self):
        raise TypeError("len is not well defined for symbolic Tensors (%s); use tf.shape" %
                        self.name)

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self.shape, self.dtype.name)


class _ThreadLocalStack(threading.local):
    def __init__(self):
        self.graphs = []
        self.sessions = []


_stack = _ThreadLocalStack()
_global_default_graph = None


class Graph:
    """tf.Graph over loom._loom.Graph. Names, name scopes and control dependencies follow
    TF1: a node's name is made unique in the graph; `name_scope` opens a unique scope
    ("a", then "a_1"); a name ending in "/" re-enters a scope exactly."""

    def __init__(self):
        self._g = _loom.Graph()
        self._name_stack = ""
        self._collections = {}
        self._py_variables = {}  # variable node name -> Variable
        self._wrapped_ops = {}
        self._wrapped_tensors = {}
        self._seed = None
        self._variable_scope_stack = []
        self._scope_counts = {}

    # --- wrapping -------------------------------------------------------------------
    def _operation(self, node):
        op = self._wrapped_ops.get(node.id)
        if op is None:
            op = Operation(self, node)
            self._wrapped_ops[node.id] = op
        return op

    def _tensor(self, out):
        key = (out.node.id, out.index)
        t = self._wrapped_tensors.get(key)
        if t is None:
            if out.index == 0 and out.node.op == "VariableV2":
                from loom.compat.v1 import _variables
                t = _variables._wrap_variable(self, out.node)
            else:
                t = Tensor(self, out)
            self._wrapped_tensors[key] = t
        return t

    # --- names ------------------------------------------------------------------------
    def unique_name(self, name, mark_as_used=True):
        full = self._name_stack + "/" + name if self._name_stack else name
        return self._g.unique_name(full) if mark_as_used else full

    def get_name_scope(self):
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name):
        old = self._name_stack
        if name is None or name == "":
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._name_stack = old

    # --- control dependencies -------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        # The blocks live in the C++ graph: Graph::AddNode gives every node built inside
        # one (by this package or by a C++ builder: layers, optimizers, metrics) the block's
        # ops as control inputs, as TF1 gives every op built there.
        if control_inputs is None:
            # As TF1's, this also leaves every cond branch being built.
            with self._g.outside_contexts():
                yield
            return
        nodes = []
        for c in control_inputs:
            if isinstance(c, (list, tuple)):
                raise TypeError("control_dependencies: each control input must be an "
                                "Operation or a Tensor, got a %s: flatten the list"
                                % type(c).__name__)
            nodes.append(_as_operation(self, c)._node)
        self._g.push_control_dependencies(nodes)
        try:
            yield
        finally:
            self._g.pop_control_dependencies()

    def _current_control_nodes(self):
        return list(self._g.control_dependencies())

    # --- nodes ----------------------------------------------------------------------
    def _add_node(self, op_type, name, inputs, attrs):
        """Adds a node of the registered op `op_type` named `name` (made unique under the
        current name scope); returns the Operation."""
        if self._g.finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        full = self.unique_name(name)
        node = self._g.add_node(op_type, full, [t._out for t in inputs], attrs, [])
        return self._operation(node)

    def get_operation_by_name(self, name):
        node = self._g.find_node(name)
        if node is None:
            raise KeyError("The name '%s' refers to an Operation not in the graph." % name)
        return self._operation(node)

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError("The name '%s' looks like an (invalid) Operation name, not a "
                             "Tensor. Tensor names must be of the form \"<op_name>:<output_index>\"."
                             % name)
        try:
            return self._tensor(self._g.get_output(name))
        except _loom.NotFoundError as e:
            raise KeyError(e.message) from None

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            return self.get_operation_by_name(obj)
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError("%s is not an element of this graph." % obj)
            return obj
        raise TypeError("Can not convert a %s into a graph element." % type(obj).__name__)

    def get_operations(self):
        return [self._operation(self._g.node(i)) for i in range(self._g.num_nodes)]

    def finalize(self):
        self._g.finalize()

    @property
    def finalized(self):
        return self._g.finalized

    @property
    def seed(self):
        return self._seed

    @seed.setter
    def seed(self, value):
        self._seed = value
        self._g.seed = -1 if value is None else int(value)

    # --- collections ----------------------------------------------------------------
    def add_to_collection(self, name, value):
        kind = _NATIVE_COLLECTIONS.get(name)
        if kind is not None:
            _add_native(self, name, kind, value)
        else:
            self._collections.setdefault(name, []).append(value)
            _mirror_native(self, name, value)

    def _adopt_native_collections(self):
        """After an import: the imported graph's collections of other keys (what
        _mirror_native wrote) become Python collections again, as TF's MetaGraphDef
        collection_def, so tf.get_collection("logits")[0] works after
        tf.train.import_meta_graph."""
        from loom.compat.v1 import _variables
        for name in self._g.collection_names():
            if name in _NATIVE_COLLECTIONS or name in _RESERVED_NATIVE_NAMES:
                continue
            have = self._collections.setdefault(name, [])
            names = {getattr(v, "name", None) for v in have}
            for item in self._g.collection(name):
                if isinstance(item, tuple):
                    value = _variables._wrap_variable(self, item[0].node)
                elif isinstance(item, _loom.Output):
                    value = self._tensor(item)
                else:
                    value = self._operation(item)
                if value.name not in names:
                    have.append(value)
                    names.add(value.name)

    def add_to_collections(self, names, value):
        for n in ([names] if isinstance(names, str) else names):
            self.add_to_collection(n, value)

    def get_collection_ref(self, name):
        if name in _NATIVE_COLLECTIONS or name in (GraphKeys.GLOBAL_VARIABLES,
                                                   GraphKeys.TRAINABLE_VARIABLES,
                                                   GraphKeys.LOCAL_VARIABLES):
            raise ValueError("collection '%s' is kept by the graph itself: use "
                             "get_collection / add_to_collection" % name)
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        from loom.compat.v1 import _variables
        if name == GraphKeys.GLOBAL_VARIABLES:
            items = [_variables._wrap_variable(self, n) for n in self._g.variables()
                     if not n.attrs.get("local", False)]
            items += self._collections.get(name, [])
        elif name == GraphKeys.TRAINABLE_VARIABLES:
            items = [_variables._wrap_variable(self, n) for n in self._g.trainable_variables()]
        elif name == GraphKeys.LOCAL_VARIABLES:
            items = [_variables._wrap_variable(self, n) for n in self._g.variables()
                     if n.attrs.get("local", False)]
            items += self._collections.get(name, [])
        elif name in _NATIVE_COLLECTIONS:
            items = []
            for item in self._g.collection(name):
                if isinstance(item, tuple):
                    items.append(_variables._wrap_variable(self, item[0].node))
                elif isinstance(item, _loom.Output):
                    items.append(self._tensor(item))
                else:
                    items.append(self._operation(item))
        else:
            items = list(self._collections.get(name, []))
        if scope is not None:
            import re
            pattern = re.compile(scope)
            items = [i for i in items if hasattr(i, "name") and pattern.match(i.name)]
        return items

    def get_all_collection_keys(self):
        return sorted(set(self._collections) | set(self._g.collection_names()))

    def clear_collection(self, name):
        self._collections.pop(name, None)

    # --- default graph --------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        _stack.graphs.append(self)
        try:
            yield self
        finally:
            _stack.graphs.pop()

    @property
    def version(self):
        return self._g.num_nodes

    @property
    def building_function(self):
        return False


# Names the C++ layers use for their own typed collections: a Python collection of one
# of these names is not mirrored into the graph.
_RESERVED_NATIVE_NAMES = frozenset({
    "variables", "local_variables", "trainable_variables", "global_step", "update_ops",
    "regularization_losses", "losses", "loom_loss"})


def _mirror_native(graph, name, value):
    """Also records a tensor, operation or variable of a Python-kept collection in the
    graph's own collections, which are written with the graph (the .meta file), so
    import_meta_graph brings the collection back (_adopt_native_collections). Other
    values (strings, numbers, Python objects) stay in Python only, and so does an item
    added once the graph is finalized."""
    if name in _RESERVED_NATIVE_NAMES or graph._g.finalized:
        return
    if isinstance(value, Operation):
        kind = "operation"
    elif isinstance(value, Tensor):
        kind = "output"
    elif hasattr(value, "initializer") and hasattr(value, "_out"):
        kind = "variable"
    else:
        return
    if getattr(value, "graph", graph) is not graph:
        return
    _add_native(graph, name, kind, value)


def _add_native(graph, name, kind, value):
    if kind == "operation":
        op = _as_operation(graph, value)
        graph._g.add_to_collection(name, kind, op._node)
    elif kind == "output":
        t = convert_to_tensor(value)
        graph._g.add_to_collection(name, kind, t._out.node, t._out.index)
    else:
        from loom.compat.v1 import _variables
        init = value.initializer
        graph._g.add_to_collection(name, kind, value._out.node, 0, init._node)


def _as_operation(graph, value):
    if isinstance(value, Operation):
        return value
    if isinstance(value, Tensor):
        return value.op
    if isinstance(value, str):
        return graph.get_operation_by_name(value)
    if hasattr(value, "op"):
        return value.op
    raise TypeError("Can not convert a %s into an Operation" % type(value).__name__)


def get_default_graph():
    """tf.get_default_graph: the innermost Graph.as_default(), else the global one."""
    global _global_default_graph
    if _stack.graphs:
        return _stack.graphs[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    """tf.reset_default_graph: a fresh global default graph."""
    global _global_default_graph
    if _stack.graphs:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs.")
    _global_default_graph = Graph()


def name_scope(name, default_name=None, values=None):
    """tf.name_scope(name, default_name=None, values=None)."""
    graph = _graph_of(values) if values else get_default_graph()
    return graph.name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def _graph_of(values):
    for v in values or ():
        if isinstance(v, (Tensor, Operation)):
            return v.graph
    return get_default_graph()


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def set_random_seed(seed):
    get_default_graph().seed = seed


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """tf.constant(value, dtype=None, shape=None, name='Const')."""
    graph = get_default_graph()
    array = _to_numpy(value, dtype)
    if shape is not None:
        shape = list(TensorShape(shape).as_list())
        size = int(np.prod(shape))
        if verify_shape and list(array.shape) != shape:
            raise TypeError("Expected Tensor's shape: %s, got %s." % (shape, list(array.shape)))
        if array.size == 1 and size != 1:
            array = np.full(shape, array.reshape(()), dtype=array.dtype)
        elif array.size > size:
            raise TypeError("Too many elements provided. Needed at most %d, but received %d"
                            % (size, array.size))
        elif 0 < array.size < size:
            # TF 1.x: a shorter value is padded with its last element.
            flat = array.reshape(-1)
            array = np.concatenate([flat, np.repeat(flat[-1:], size - flat.size)]).reshape(shape)
        else:
            array = array.reshape(shape)
    return graph._add_node("Const", name, [], {"value": array}).outputs[0]


def _holds_tensor(value):
    """Whether a (nested) list or tuple holds a Tensor (or a Variable)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_tensor(v) for v in value)


def _python_leaves(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _python_leaves(v)
    else:
        yield value


def _assert_compatible(value, want):
    """TF 1.15's _AssertCompatible for Python values (numpy arrays are cast, as TF does):
    a float is no integer (tf.constant(0.5, tf.int32), x_int32 + 0.5 raise TypeError
    instead of truncating to 0), a number no bool, a bool only bool."""
    if isinstance(value, (np.ndarray, np.generic)):
        return
    for leaf in _python_leaves(value):
        if isinstance(leaf, (np.ndarray, Tensor)):
            continue
        if want.is_bool:
            ok = isinstance(leaf, (bool, np.bool_))
        elif want.is_integer:
            ok = isinstance(leaf, numbers.Integral)
        elif want.is_floating:
            ok = isinstance(leaf, numbers.Real)
        else:
            ok = True
        if not ok:
            raise TypeError("Expected %s, got %r of type '%s' instead."
                            % (want.name, leaf, type(leaf).__name__))
        if want.is_integer and not isinstance(leaf, bool):
            info = np.iinfo(want.as_numpy_dtype)
            if not info.min <= int(leaf) <= info.max:
                # numpy would wrap it (2**40 as int32 is 0): refused instead.
                raise ValueError("Can't convert Python int %d to %s: it is outside [%d, %d]; "
                                 "use a wider dtype (tf.int64)" % (int(leaf), want.name,
                                                                  info.min, info.max))


def _to_numpy(value, dtype=None):
    """`value` as a numpy array of `dtype`, or of TF's dtype for it: Python floats are
    float32 and Python ints int32 (int64 when they do not fit); arrays keep theirs."""
    if dtype is not None:
        want = _dtypes.as_dtype(dtype)
        if want == _dtypes.string:
            return np.asarray(value, dtype=object)
        _assert_compatible(value, want)
        return np.asarray(value, dtype=want.as_numpy_dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    array = np.asarray(value)
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64:
        if array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31):
            return array.astype(np.int32)
    return array


def placeholder(dtype, shape=None, name=None):
    """tf.placeholder(dtype, shape=None, name=None): fed through Session.run's feed_dict."""
    graph = get_default_graph()
    op = graph._add_node("Placeholder", name or "Placeholder", [],
                         {"dtype": _dtypes.as_dtype(dtype)._enum, "shape": _as_shape(shape)})
    return op.outputs[0]


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """tf.convert_to_tensor: Tensors (and Variables) as they are, anything else as a
    constant (Python floats are float32, ints int32, as in TF)."""
    if isinstance(value, Tensor):
        if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                             % (_dtypes.as_dtype(dtype).name, value.dtype.name, value))
        return value
    if hasattr(value, "_as_tensor"):
        return value._as_tensor()
    if isinstance(value, Operation):
        raise TypeError("Can not convert an Operation (%s) into a Tensor" % value.name)
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        # TF's autopacking: a list holding tensors is their tf.stack (Python values take
        # the first tensor's dtype); a requested dtype must be that dtype.
        from loom.compat.v1 import _ops
        packed = _ops.stack(list(value), name=name or "stack")
        if dtype is not None and _dtypes.as_dtype(dtype) != packed.dtype:
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                             % (_dtypes.as_dtype(dtype).name, packed.dtype.name, packed))
        return packed
    return constant(value, dtype=dtype, name=name or "Const")
