"""tf.data: Dataset over Loom's C++ datasets (loom/data), and graph iterators.

A Dataset is a host-side object, never graph nodes: from_tensor_slices over numpy arrays
views their memory (no copy; the dataset keeps the arrays alive), over placeholders it
reads the arrays fed when the iterator's initializer runs (TF1's 2 GB workaround). `map`
and `filter` trace the Python function once into a graph of its own, as TF1 does, and the
C++ pipeline runs that graph per element: no Python call per element.

An element is a nested structure (a tensor, tuples, lists, dicts) of components; each
component's name in the C++ dataset is its path in the structure: "0" for a single
tensor, "1" for a tuple's second, "0/x" for key "x" of a tuple's first dict (C++ sources
with names of their own, such as TFRecordDataset's "record", are renamed)."""
import collections
import threading

import numpy as np

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes
from loom.compat.v1 import sparse as _sparse

AUTOTUNE = -1


# --- structures: a template whose leaves are component names ---------------------------
class _SparseLeaf(collections.namedtuple("_SparseLeaf", ["indices", "values", "dense_shape"])):
    """A SparseTensor in an element: the names of its three components ("<path>/indices",
    "<path>/values", "<path>/dense_shape")."""


_SPARSE_PARTS = ("indices", "values", "dense_shape")


def _flatten_values(value, path=""):
    """(template, {component name: leaf}) of a nested value."""
    leaves = {}

    def walk(v, p):
        if isinstance(v, _sparse.SparseTensor):
            base = p or "0"
            names = _SparseLeaf(*("%s/%s" % (base, part) for part in _SPARSE_PARTS))
            for name, t in zip(names, (v.indices, v.values, v.dense_shape)):
                leaves[name] = t
            return names
        if isinstance(v, dict):
            return {k: walk(v[k], p + "/" + str(k) if p else str(k)) for k in sorted(v)}
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return type(v)(*(walk(x, "%s/%d" % (p, i) if p else str(i)) for i, x in enumerate(v)))
        if isinstance(v, (tuple, list)) and not _is_leaf_list(v):
            return type(v)(walk(x, "%s/%d" % (p, i) if p else str(i)) for i, x in enumerate(v))
        name = p or "0"
        leaves[name] = v
        return name
    template = walk(value, path)
    return template, leaves


def _is_leaf_list(v):
    # A list of numbers is one component (TF treats lists as tensors), a tuple is a structure.
    return isinstance(v, list) and all(isinstance(x, (int, float, bool, bytes, str, np.number))
                                       for x in v)


def _sparse_of(parts):
    """A sparse leaf's three leaf_fn results as one: a SparseTensor of Tensors, a
    _SparseLeaf of new names."""
    if all(isinstance(p, _fw.Tensor) for p in parts):
        return _sparse.SparseTensor(*parts)
    if all(isinstance(p, str) for p in parts):
        return _SparseLeaf(*parts)
    raise TypeError("a SparseTensor component cannot hold %r" % (parts,))


def _build(template, leaf_fn, sparse_fn=None):
    """The element of `template` with leaf_fn(name) at each component; a sparse
    component is sparse_fn(its _SparseLeaf) (default: _sparse_of its parts)."""
    if isinstance(template, _SparseLeaf):
        if sparse_fn is not None:
            return sparse_fn(template)
        return _sparse_of([leaf_fn(n) for n in template])
    if isinstance(template, dict):
        return {k: _build(v, leaf_fn, sparse_fn) for k, v in template.items()}
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*(_build(v, leaf_fn, sparse_fn) for v in template))
    if isinstance(template, (tuple, list)):
        return type(template)(_build(v, leaf_fn, sparse_fn) for v in template)
    return leaf_fn(template)


def _leaves(template):
    out = []
    _build(template, out.append, out.extend)
    return out


def _sparse_leaves(template):
    out = []
    _build(template, lambda n: None, out.append)
    return out


def _per_component(template, value, what):
    """{component: leaf of `value`} for a `value` in the structure of `template` (e.g.
    padded_shapes for an element): the template decides where the leaves are."""
    out = {}

    def walk(t, v):
        if isinstance(t, dict):
            if not isinstance(v, dict) or sorted(v) != sorted(t):
                raise ValueError("%s: %r does not match the element's structure (keys %s)"
                                 % (what, v, sorted(t)))
            for k in t:
                walk(t[k], v[k])
        elif isinstance(t, (tuple, list)):
            if not isinstance(v, (tuple, list)) or len(v) != len(t):
                raise ValueError("%s: %r does not match the element's structure (%d parts)"
                                 % (what, v, len(t)))
            for a, b in zip(t, v):
                walk(a, b)
        else:
            out[t] = v
    walk(template, value)
    return out


# Per thread, the graph of the interleave / flat_map function being called for one input
# element (its argument is constants of the element's values there): tensors of it that a
# source reads are computed at once, since the dataset it returns is needed now.
_eager = threading.local()


def _value_of(tensor, what):
    """The value of a Tensor given to a dataset source: a constant's, or computed when
    the interleave / flat_map function is being called; None for a graph tensor (a
    placeholder, which an initializer binds)."""
    if tensor.op.type == "Const":
        return tensor.op.get_attr("value")
    graph = getattr(_eager, "graph", None)
    if graph is not None and tensor.graph is graph:
        from loom.compat.v1 import _session
        with _session.Session(graph=graph) as sess:
            return sess.run(tensor)
    return None


def _static_int(value, what):
    if isinstance(value, _fw.Tensor):
        v = _value_of(value, what)
        if v is None:
            raise NotImplementedError("%s as a computed tensor; pass a Python int" % what)
        value = v
    return int(value)


def _source(native):
    """A C++ source of one component, renamed to the package's name for a single tensor."""
    (name,) = native.spec.keys()
    return Dataset(native.rename({name: "0"}) if name != "0" else native, "0")


class _ElementSpec:
    """output_types / output_shapes of a C++ dataset or iterator (`_native.spec`: name ->
    (dtype, shape)) in the structure of its Python element (`_template`)."""

    @property
    def output_types(self):
        spec = self._native.spec
        return _build(self._template, lambda n: _dtypes.as_dtype(spec[n][0]),
                      lambda leaf: _dtypes.as_dtype(spec[leaf.values][0]))

    @property
    def output_shapes(self):
        spec = self._native.spec

        def sparse_shape(leaf):  # the dense shape's rank, its dims unknown
            rank = spec[leaf.dense_shape][1]
            rank = rank[0] if rank else None
            return _fw.TensorShape(None if rank is None else [None] * rank)
        return _build(self._template, lambda n: _fw.TensorShape(spec[n][1]), sparse_shape)


class Dataset(_ElementSpec):
    """tf.data.Dataset. A dataset of windows (`window`) is `nested`: each element's
    components are the windows' elements stacked in one C++ element, handed to flat_map /
    interleave functions as one Dataset per component (TF's nested datasets)."""

    def __init__(self, native, template, nested=False):
        self._native = native
        self._template = template
        self._nested = nested

    def _flat(self, what):
        if self._nested:
            raise TypeError(
                "%s: the elements of this dataset are datasets (made by window); turn each "
                "into tensors first, e.g. .flat_map(lambda w: w.batch(size))" % what)

    # --- sources ----------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors):
        template, leaves = _flatten_values(tensors)
        components = {}
        for name, v in leaves.items():
            if isinstance(v, _fw.Tensor):
                value = _value_of(v, "from_tensor_slices")
                components[name] = v._out if value is None else value
            else:
                components[name] = v if isinstance(v, np.ndarray) else _fw._to_numpy(v)
        return Dataset(_loom.from_tensor_slices(components), template)

    @staticmethod
    def from_tensors(tensors):
        template, leaves = _flatten_values(tensors)
        components = {}
        for name, v in leaves.items():
            if isinstance(v, _fw.Tensor):
                value = _value_of(v, "from_tensors")
                if value is None:
                    raise NotImplementedError("Dataset.from_tensors over computed tensors; "
                                              "use from_tensor_slices over placeholders")
                v = value
            components[name] = v if isinstance(v, np.ndarray) else _fw._to_numpy(v)
        return Dataset(_loom.from_tensors(components), template)

    @staticmethod
    def range(*args):
        start, stop, step = 0, None, 1
        if len(args) == 1:
            stop = args[0]
        elif len(args) == 2:
            start, stop = args
        else:
            start, stop, step = args
        return _source(_loom.range(_static_int(start, "range start"),
                                   _static_int(stop, "range stop"),
                                   _static_int(step, "range step")))

    @staticmethod
    def zip(datasets):
        """Elements of the datasets side by side, in their nested structure (a tuple or
        dict of datasets); ends with the shortest."""
        template, leaves = _flatten_values(datasets)
        natives = []
        inner = {}
        for path, ds in leaves.items():
            if not isinstance(ds, Dataset):
                raise TypeError("Dataset.zip takes a nested structure of Datasets, got %r at "
                                "'%s'" % (ds, path))
            names = {c: path + "/" + c for c in _leaves(ds._template)}
            natives.append(ds._native.rename(names))
            inner[path] = _build(ds._template, names.get)
        return Dataset(_loom.zip(natives), _build(template, inner.get))

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        """Elements from a Python generator: generator(*args) is called for each iterator
        and its values (structures of output_types) converted to tensors. The pipeline
        calls it with the GIL, once per element. A checkpointed position is restored by
        calling generator(*args) again and skipping the elements already produced: exact
        only for a deterministic generator (TF cannot checkpoint one at all)."""
        template, types = _flatten_values(output_types)
        shapes = {}
        if output_shapes is not None:
            shapes = _per_component(template, output_shapes, "from_generator output_shapes")
        spec = {n: (_dtypes.as_dtype(t)._enum, _fw.TensorShape(shapes.get(n)).dims)
                for n, t in types.items()}
        args = tuple(args or ())

        def make():
            it = iter(generator(*args))

            def next_element():
                try:
                    value = next(it)
                except StopIteration:
                    return None
                return _per_component(template, value, "from_generator's generator")
            return next_element
        return Dataset(_loom.from_generator(make, spec), template)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The file names matching the glob pattern(s) (scalar strings), shuffled unless
        shuffle=False (TF's default), else sorted."""
        import glob
        patterns = _file_list(file_pattern)
        files = sorted({f for p in patterns for f in glob.glob(p)})
        if not files:
            from loom.compat.v1 import errors as _errors
            message = "Dataset.list_files: no files match %s" % patterns
            error = _errors.InvalidArgumentError(message)
            error.message, error.node_name = message, None
            raise error
        ds = Dataset.from_tensor_slices(np.array([f.encode() for f in files], dtype=object))
        if shuffle is None or shuffle:
            ds = ds.shuffle(len(files), seed=seed)
        return ds


    # --- properties -------------------------------------------------------------------

    @property
    def output_classes(self):
        return _build(self._template, lambda n: _fw.Tensor, lambda leaf: _sparse.SparseTensor)

    element_spec = _ElementSpec.output_shapes

    # --- transformations --------------------------------------------------------------
    def _same(self, native):
        return Dataset(native, self._template, self._nested)

    def batch(self, batch_size, drop_remainder=False):
        """Stacks batch_size elements. A SparseTensor component of rank R becomes one of
        rank R + 1 (indices [n, R + 1] with the element's position first, dense_shape
        [batch, the largest of each dim]), as TF's: its three tensors are padded into one
        batch and joined by the SparseBatchPadded op; the dense components of such an
        element are padded too where their shapes differ (TF would fail)."""
        self._flat("batch")
        sparse_leaves = _sparse_leaves(self._template)
        if not sparse_leaves:
            return self._same(self._native.batch(int(batch_size), bool(drop_remainder)))
        # Padding rows of -1 mark where an element's indices end.
        padding = {leaf.indices: np.int64(-1) for leaf in sparse_leaves}
        padded = self._same(self._native.padded_batch(int(batch_size), {}, padding,
                                                      bool(drop_remainder)))

        def join(*element):
            element = element[0] if len(element) == 1 else element
            return _map_sparse(element, _sparse._batch_padded)
        if isinstance(self._template, tuple) and not hasattr(self._template, "_fields"):
            return padded.map(lambda *e: join(e))
        return padded.map(join)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        return self._same(self._native.shuffle(
            int(buffer_size), None if seed is None else int(seed),
            True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)))

    def repeat(self, count=None):
        """count: None or -1 (forever), a Python int, or an int32/int64 scalar tensor (a
        placeholder: read when the initializer of make_initializable_iterator runs, with
        it fed, as TF's repeat(num_epochs))."""
        if isinstance(count, _fw.Tensor):
            value = _value_of(count, "repeat")
            if value is None:
                return self._same(self._native.repeat(count._out))
            count = value
        return self._same(self._native.repeat(-1 if count is None else int(count)))

    def take(self, count):
        return self._same(self._native.take(int(count)))

    def skip(self, count):
        return self._same(self._native.skip(int(count)))

    def shard(self, num_shards, index):
        return self._same(self._native.shard(int(num_shards), int(index)))

    def prefetch(self, buffer_size):
        return self._same(self._native.prefetch(int(buffer_size)))

    def cache(self, filename=""):
        return self._same(self._native.cache(filename))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        """Batches, padding each component to padded_shapes (unknown dims: the batch's
        longest; default all) with padding_values (default 0 / b"")."""
        self._flat("padded_batch")
        self._no_sparse("padded_batch", "use batch, which batches SparseTensors")
        shapes = {}
        if padded_shapes is not None:
            shapes = _per_component(self._template, padded_shapes, "padded_batch padded_shapes")
            shapes = {n: _fw.TensorShape(s).dims for n, s in shapes.items()}
        values = {}
        if padding_values is not None:
            values = _per_component(self._template, padding_values,
                                    "padded_batch padding_values")
            for n, v in values.items():
                if isinstance(v, _fw.Tensor):
                    value = _value_of(v, "padding_values")
                    if value is None:
                        raise NotImplementedError("padding_values as a computed tensor")
                    values[n] = value
        return self._same(self._native.padded_batch(int(batch_size), shapes, values,
                                                    bool(drop_remainder)))

    def interleave(self, map_func, cycle_length=AUTOTUNE, block_length=1,
                   num_parallel_calls=None):
        """map_func(element) returns a Dataset; cycle_length of them are open at once and
        block_length elements are taken from each in turn (TF's order). Unlike TF,
        map_func is not traced: it runs in Python once per input element (and again for
        each open one when a checkpoint is restored), on constants of the element's
        values; tensors it computes from them are evaluated when a source reads them."""
        call = self._element_function(map_func)
        from loom.compat.v1 import errors as _errors
        try:
            first = self._native.first_element()
        except _errors.FailedPreconditionError as e:
            raise NotImplementedError(
                "interleave / flat_map over a dataset of placeholders: map_func is called "
                "on the first input element when the dataset is built, which needs the "
                "values; build the file names (or other inputs) from Python values (%s)"
                % e.message) from None
        if first is None:  # an empty input: any spec does
            return Dataset(self._native.take(0), self._template)
        probe = call(first)
        spec = probe._native.spec
        if any(shape is None or None in shape for _, shape in self._native.spec.values()):
            # Elements of varying shapes may give datasets of varying shapes.
            spec = {n: (dtype, None if shape is None else [None] * len(shape))
                    for n, (dtype, shape) in spec.items()}
        names = set(spec)

        def native_call(element):
            ds = call(element)
            if set(ds._native.spec) != names:
                raise ValueError("interleave: map_func returned datasets with components %s "
                                 "and %s; return one structure" % (sorted(names),
                                                                    sorted(ds._native.spec)))
            return ds._native
        parallel = 0 if num_parallel_calls is None else int(num_parallel_calls)
        native = self._native.interleave_py(native_call, spec, int(cycle_length),
                                            int(block_length), parallel)
        return Dataset(native, probe._template)

    def flat_map(self, map_func):
        """The datasets map_func returns, one after the other (interleave with a cycle of
        one)."""
        return self.interleave(map_func, cycle_length=1, block_length=1)

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        """A dataset of windows: window k holds elements k*shift, k*shift + stride, ...
        (size of them; shorter at the end unless drop_remainder), as TF's window. Each
        element is a structure of Datasets (one per component); flat_map or interleave
        turns them into tensors: ds.window(3, 1).flat_map(lambda w: w.batch(3)). The
        elements of one window must share their shapes (they are stacked in C++)."""
        self._flat("window")
        native = self._native.window(_static_int(size, "window size"),
                                     0 if shift is None else _static_int(shift, "window shift"),
                                     _static_int(stride, "window stride"), bool(drop_remainder))
        return Dataset(native, self._template, nested=True)

    def reduce(self, initial_state, reduce_func):
        """tf.data's reduce: tensors holding reduce_func(...reduce_func(initial_state,
        e0)..., en) over every element, computed each time they are run (a fresh pass over
        the dataset, in C++). reduce_func(state, element) is traced once, as map's
        function; it must keep the state's structure and dtypes, and a state component
        whose shape it changes gets an unknown shape there (TF relaxes it the same way)."""
        self._flat("reduce")
        graph = _fw.get_default_graph()
        state_template, leaves = _flatten_values(initial_state)
        with graph.as_default():
            init = {n: _fw.convert_to_tensor(v) for n, v in leaves.items()}
        shapes = {n: t.shape.dims for n, t in init.items()}
        for _ in range(3):
            fn_graph, state_ph, element_ph, new_state = self._trace_reduce(
                reduce_func, state_template, {n: t.dtype for n, t in init.items()}, shapes)
            relaxed = {n: _most_general(shapes[n], new_state[n].shape.dims) for n in shapes}
            if relaxed == shapes:
                break
            shapes = relaxed
        spec = {n: (init[n].dtype._enum, shapes[n]) for n in init}
        outs = self._native.reduce_traced(
            graph._g, graph.get_name_scope(), {n: t._out for n, t in init.items()},
            fn_graph._g, state_ph, element_ph, {n: t._out for n, t in new_state.items()}, spec)
        return _build(state_template, lambda n: graph._tensor(outs[n]))

    def _trace_reduce(self, reduce_func, state_template, dtypes, shapes):
        """Traces reduce_func(state, element) on placeholders in a graph of its own:
        (graph, {state component: placeholder}, {element component: placeholder},
        {state component: new state tensor})."""
        graph = _fw.Graph()
        spec = self._native.spec
        state_ph, element_ph = {}, {}
        with graph.as_default():
            def state_leaf(name):
                ph = _fw.placeholder(dtypes[name], shapes[name],
                                     name="state_" + name.replace("/", "_"))
                state_ph[name] = ph._out
                return ph

            def element_leaf(name):
                dtype, shape = spec[name]
                ph = _fw.placeholder(_dtypes.as_dtype(dtype), shape,
                                     name="arg_" + name.replace("/", "_"))
                element_ph[name] = ph._out
                return ph
            result = reduce_func(_build(state_template, state_leaf),
                                 _build(self._template, element_leaf))
            values = _per_component(state_template, result, "reduce_func's new state")
            new_state = {}
            for n, v in values.items():
                t = _fw.convert_to_tensor(v, dtype=dtypes[n]) if not isinstance(
                    v, _fw.Tensor) else v
                if t.dtype != dtypes[n]:
                    raise TypeError("reduce_func: state component '%s' is %s in the initial "
                                    "state but %s in the state it returns; keep its dtype"
                                    % (n, dtypes[n].name, t.dtype.name))
                new_state[n] = t
        return graph, state_ph, element_ph, new_state

    def _element_function(self, fn):
        """fn as a function of an element ({component: array}) returning a Dataset: called
        on constants of the values in a graph of its own."""
        template = self._template
        nested = self._nested

        def leaf(values, name):
            if nested:  # a window: its elements, one Dataset per component
                return Dataset(_loom.from_tensor_slices({"0": values[name]}), "0")
            return _fw.constant(values[name])

        def call(values):
            graph = _fw.Graph()
            outer = getattr(_eager, "graph", None)
            with graph.as_default():
                args = _build(template, lambda n: leaf(values, n))
                _eager.graph = graph
                try:
                    if isinstance(args, tuple) and not hasattr(args, "_fields"):
                        result = fn(*args)
                    else:
                        result = fn(args)
                finally:
                    _eager.graph = outer
            if not isinstance(result, Dataset):
                raise TypeError("interleave / flat_map: map_func must return a Dataset, got %r"
                                % (result,))
            return result
        return call

    def unbatch(self):
        self._flat("unbatch")
        self._no_sparse("unbatch", "densify it with tf.sparse.to_dense in a map first")
        return self._same(self._native.unbatch())

    def _no_sparse(self, what, workaround):
        leaves = _sparse_leaves(self._template)
        if leaves:
            name = leaves[0].indices.rsplit("/", 1)[0]
            raise NotImplementedError(
                "Dataset.%s: component '%s' is a SparseTensor, which %s does not take; %s"
                % (what, name, what, workaround))

    def concatenate(self, dataset):
        return self._same(self._native.concatenate(dataset._native))

    def apply(self, transformation_func):
        return transformation_func(self)

    def _trace(self, fn):
        """Traces `fn` once on placeholders shaped like the element, in a graph of its
        own; returns (graph, {component: placeholder}, result)."""
        graph = _fw.Graph()
        spec = self._native.spec
        with graph.as_default():
            placeholders = {}

            def leaf(name):
                dtype, shape = spec[name]
                ph = _fw.placeholder(_dtypes.as_dtype(dtype), shape,
                                     name="arg_" + name.replace("/", "_"))
                placeholders[name] = ph._out
                return ph
            args = _build(self._template, leaf)
            if isinstance(args, tuple) and not hasattr(args, "_fields"):
                result = fn(*args)
            else:
                result = fn(args)
        return graph, placeholders, result

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """Traces map_func once into graph ops on the element (as TF1). An OutOfRangeError
        raised by the function when it runs (a py_func raising StopIteration) ends the
        dataset there, as TF1's map does."""
        self._flat("map")
        graph, placeholders, result = self._trace(map_func)
        with graph.as_default():
            template, leaves = _flatten_values(result)
            outputs = {n: _fw.convert_to_tensor(v)._out for n, v in leaves.items()}
        native = self._native.map_traced(graph._g, placeholders, outputs,
                                         0 if num_parallel_calls is None else int(num_parallel_calls),
                                         True if deterministic is None else bool(deterministic))
        return Dataset(native, template)

    def filter(self, predicate):
        self._flat("filter")
        graph, placeholders, result = self._trace(predicate)
        with graph.as_default():
            pred = _fw.convert_to_tensor(result)
        return self._same(self._native.filter_traced(graph._g, placeholders, pred._out))

    # --- iterators --------------------------------------------------------------------
    def make_one_shot_iterator(self):
        self._flat("make_one_shot_iterator")
        graph = _fw.get_default_graph()
        it = self._native.make_one_shot_iterator(graph._g, graph.get_name_scope())
        return Iterator(graph, it, self._template)

    def make_initializable_iterator(self, shared_name=None):
        self._flat("make_initializable_iterator")
        graph = _fw.get_default_graph()
        it = self._native.make_initializable_iterator(graph._g, graph.get_name_scope())
        return Iterator(graph, it, self._template)

    def __iter__(self):
        raise TypeError("a tf.data.Dataset is iterated through an iterator in a Session: "
                        "make_one_shot_iterator() / make_initializable_iterator()")


class Iterator(_ElementSpec):
    """tf.data.Iterator: get_next() gives the next element's tensors (OutOfRangeError at
    the end); `initializer` (re)starts an initializable or reinitializable one."""

    def __init__(self, graph, native, template):
        self._graph = graph
        self._native = native
        self._template = template

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        graph = _fw.get_default_graph()
        template, types = _flatten_values(output_types)
        shapes = {}
        if output_shapes is not None:
            _, shapes = _flatten_values(output_shapes)
        classes = {}
        if output_classes is not None:
            _, classes = _flatten_values(output_classes)
        spec = {}
        for n, t in types.items():
            dtype = _dtypes.as_dtype(t)._enum
            dims = _fw.TensorShape(shapes.get(n)).dims
            if classes.get(n) is _sparse.SparseTensor:  # its three components
                rank = None if dims is None else len(dims)
                leaf = _SparseLeaf(*("%s/%s" % (n, part) for part in _SPARSE_PARTS))
                spec[leaf.indices] = (_dtypes.int64._enum, [None, rank])
                spec[leaf.values] = (dtype, [None])
                spec[leaf.dense_shape] = (_dtypes.int64._enum, [rank])
            else:
                spec[n] = (dtype, dims)
        template = _build(template, lambda n: _SparseLeaf(
            *("%s/%s" % (n, part) for part in _SPARSE_PARTS))
            if classes.get(n) is _sparse.SparseTensor else n)
        native = _loom.GraphIterator.from_structure(graph._g, graph.get_name_scope(), spec)
        return Iterator(graph, native, template)

    @property
    def initializer(self):
        node = self._native.initializer
        if node is None:
            raise ValueError("this iterator has no initializer (a one-shot iterator)")
        return self._graph._operation(node)

    def make_initializer(self, dataset, name=None):
        return self._graph._operation(self._native.make_initializer(dataset._native))

    def get_next(self, name=None):
        outs = self._native.get_next()
        return _build(self._template, lambda n: self._graph._tensor(outs[n]))



def _map_sparse(element, fn):
    """`element` (a nested structure) with fn(sp) in place of each SparseTensor."""
    if isinstance(element, _sparse.SparseTensor):
        return fn(element)
    if isinstance(element, dict):
        return {k: _map_sparse(v, fn) for k, v in element.items()}
    if isinstance(element, tuple) and hasattr(element, "_fields"):
        return type(element)(*(_map_sparse(v, fn) for v in element))
    if isinstance(element, (tuple, list)):
        return type(element)(_map_sparse(v, fn) for v in element)
    return element


def _file_list(filenames):
    if isinstance(filenames, (str, bytes)):
        filenames = [filenames]
    if isinstance(filenames, _fw.Tensor):
        value = _value_of(filenames, "file names")
        if value is None:
            raise NotImplementedError("file names as a graph tensor; pass a Python list "
                                      "(or build the dataset in an interleave / flat_map "
                                      "function)")
        filenames = np.asarray(value).reshape(-1).tolist()
    return [f.decode() if isinstance(f, bytes) else str(f) for f in filenames]


def TFRecordDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
    """The records of the files: scalar strings (component "record")."""
    return _source(_loom.tfrecord_dataset(_file_list(filenames), compression_type or "",
                                          buffer_size))


def TextLineDataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
    return _source(_loom.text_line_dataset(_file_list(filenames), compression_type or ""))


def make_one_shot_iterator(dataset):
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset):
    return dataset.output_types


def get_output_shapes(dataset):
    return dataset.output_shapes


def _most_general(a, b):
    """The most general shape (dims list or None) covering both."""
    if a is None or b is None or len(a) != len(b):
        return None
    return [x if x == y else None for x, y in zip(a, b)]


def _trace_key(dataset, key_func, what):
    """key_func traced on the element: (graph, placeholders, scalar int64 key tensor)."""
    key_graph, key_inputs, key = dataset._trace(key_func)
    with key_graph.as_default():
        key = _fw.convert_to_tensor(key)
    if key.dtype != _dtypes.int64 or key.shape.dims not in (None, []):
        raise ValueError("%s: key_func must return a scalar tf.int64, got %s %s"
                         % (what, key.dtype.name, key.shape))
    return key_graph, key_inputs, key


def _call(fn, args):
    # TF unpacks a tuple structure into arguments.
    if isinstance(args, tuple) and not hasattr(args, "_fields"):
        return fn(*args)
    return fn(args)


def _group_by_reducer(dataset, key_func, reducer):
    dataset._flat("group_by_reducer")
    key_graph, key_inputs, key = _trace_key(dataset, key_func, "group_by_reducer")
    init_graph = _fw.Graph()
    with init_graph.as_default():
        key_ph = _fw.placeholder(_dtypes.int64, [], name="key")
        state_template, leaves = _flatten_values(reducer.init_func(key_ph))
        init = {n: _fw.convert_to_tensor(v) for n, v in leaves.items()}
    dtypes = {n: t.dtype for n, t in init.items()}
    shapes = {n: t.shape.dims for n, t in init.items()}
    for _ in range(3):
        reduce_graph, state_ph, element_ph, new_state = dataset._trace_reduce(
            reducer.reduce_func, state_template, dtypes, shapes)
        relaxed = {n: _most_general(shapes[n], new_state[n].shape.dims) for n in shapes}
        if relaxed == shapes:
            break
        shapes = relaxed
    finalize_graph = _fw.Graph()
    finalize_ph = {}
    with finalize_graph.as_default():
        def leaf(name):
            ph = _fw.placeholder(dtypes[name], shapes[name], name="state_" + name.replace("/", "_"))
            finalize_ph[name] = ph._out
            return ph
        out_template, out_leaves = _flatten_values(
            _call(reducer.finalize_func, _build(state_template, leaf)))
        outputs = {n: _fw.convert_to_tensor(v)._out for n, v in out_leaves.items()}
    spec = {n: (o.dtype, o.shape) for n, o in outputs.items()}
    native = dataset._native.group_by_reducer_py(
        key_graph._g, key_inputs, key._out, init_graph._g, key_ph._out,
        {n: t._out for n, t in init.items()}, reduce_graph._g, state_ph, element_ph,
        {n: t._out for n, t in new_state.items()}, finalize_graph._g, finalize_ph, outputs,
        spec)
    return Dataset(native, out_template)


class Reducer:
    """tf.data.experimental.Reducer(init_func, reduce_func, finalize_func)."""

    def __init__(self, init_func, reduce_func, finalize_func):
        self.init_func = init_func
        self.reduce_func = reduce_func
        self.finalize_func = finalize_func


def _group_by_window(dataset, key_func, reduce_func, window_size, window_size_func):
    dataset._flat("group_by_window")
    if (window_size is None) == (window_size_func is None):
        raise ValueError("group_by_window: give exactly one of window_size and "
                         "window_size_func")
    key_graph, key_inputs, key = _trace_key(dataset, key_func, "group_by_window")
    size_graph, size_input, size_output = None, None, None
    if window_size_func is not None:
        size_graph = _fw.Graph()
        with size_graph.as_default():
            ph = _fw.placeholder(_dtypes.int64, [], name="key")
            out = _fw.convert_to_tensor(window_size_func(ph))
            if out.dtype != _dtypes.int64:
                raise ValueError("group_by_window: window_size_func must return a scalar "
                                 "tf.int64, got %s" % out.dtype.name)
        size_input, size_output = ph._out, out._out
        window_size = 0
    template = dataset._template

    def call(key_value, window):
        graph = _fw.Graph()
        outer = getattr(_eager, "graph", None)
        with graph.as_default():
            _eager.graph = graph
            try:
                result = reduce_func(_fw.constant(np.int64(key_value)),
                                     Dataset(window, template))
            finally:
                _eager.graph = outer
        if not isinstance(result, Dataset):
            raise TypeError("group_by_window: reduce_func must return a Dataset, got %r"
                            % (result,))
        result._flat("group_by_window's reduce_func result")
        return result

    # The output spec: reduce_func on an empty group (the spec of what it returns follows
    # from the group's spec, not its values).
    probe = call(0, dataset._native.take(0))
    spec = probe._native.spec
    names = set(spec)

    def native_call(key_value, window):
        ds = call(key_value, window)
        if set(ds._native.spec) != names:
            raise ValueError("group_by_window: reduce_func returned datasets with components "
                             "%s and %s; return one structure"
                             % (sorted(names), sorted(ds._native.spec)))
        return ds._native
    native = dataset._native.group_by_window_py(
        key_graph._g, key_inputs, key._out, native_call, int(window_size),
        size_graph._g if size_graph is not None else None, size_input, size_output, spec)
    return Dataset(native, probe._template)


def _bucket_by_sequence_length(dataset, element_length_func, bucket_boundaries,
                               bucket_batch_sizes, padded_shapes, padding_values,
                               pad_to_bucket_boundary, no_padding, drop_remainder):
    from loom.compat.v1 import _ops  # noqa: F401 (the op functions below)
    import loom.compat.v1 as tf
    boundaries = [int(b) for b in bucket_boundaries]
    sizes = [int(b) for b in bucket_batch_sizes]
    if len(sizes) != len(boundaries) + 1:
        raise ValueError("len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1")
    if boundaries != sorted(boundaries):
        raise ValueError("bucket_boundaries must be sorted")

    def element_to_bucket_id(*args):
        length = tf.cast(element_length_func(*args), tf.int64)
        # The bucket [boundaries[i-1], boundaries[i]) holding the length (TF's rule).
        above = tf.cast(tf.greater_equal(length, np.array(boundaries, np.int64)), tf.int64)
        return tf.reduce_sum(above)

    def window_size_fn(bucket_id):
        return tf.gather(tf.constant(np.array(sizes, np.int64)), bucket_id)

    def batching_fn(bucket_id, grouped):
        bucket = int(_value_of(bucket_id, "bucket id"))
        size = sizes[bucket]
        if no_padding:
            return grouped.batch(size, drop_remainder=drop_remainder)
        filler = None
        if pad_to_bucket_boundary:
            if bucket == len(boundaries):
                raise ValueError("pad_to_bucket_boundary=True: the last bucket has no "
                                 "boundary; make the last bucket boundary larger than any "
                                 "element's length")
            filler = boundaries[bucket] - 1
        shapes = padded_shapes if padded_shapes is not None else grouped.output_shapes
        shapes = _build_shapes(shapes, filler)
        return grouped.padded_batch(size, shapes, padding_values, drop_remainder)

    return _group_by_window(dataset, element_to_bucket_id, batching_fn, None, window_size_fn)


def _build_shapes(shapes, filler):
    """padded_shapes with unknown dims set to `filler` (when given)."""
    if isinstance(shapes, dict):
        return {k: _build_shapes(v, filler) for k, v in shapes.items()}
    if isinstance(shapes, tuple):
        return tuple(_build_shapes(v, filler) for v in shapes)
    dims = _fw.TensorShape(shapes).dims
    if dims is None or filler is None:
        return shapes
    return [filler if d is None else d for d in dims]


class experimental:
    AUTOTUNE = AUTOTUNE

    @staticmethod
    def unbatch():
        """tf.data.experimental.unbatch, for Dataset.apply: Dataset.unbatch."""
        return lambda dataset: dataset.unbatch()

    @staticmethod
    def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
        """tf.data.experimental.group_by_window, for Dataset.apply: key_func (traced)
        gives each element an int64 key; a group of window_size elements (or
        window_size_func(key), traced) is passed to reduce_func(key, dataset), called in
        Python once per group (and again for the group being read when a checkpoint is
        restored); at the end, the groups left, in ascending key order."""
        return lambda dataset: _group_by_window(dataset, key_func, reduce_func, window_size,
                                                window_size_func)

    Reducer = Reducer

    @staticmethod
    def group_by_reducer(key_func, reducer):
        """tf.data.experimental.group_by_reducer, for Dataset.apply: reads the whole
        input, folding each element into its key's state (reducer.init_func(key), then
        reducer.reduce_func(state, element)); then reducer.finalize_func(state) of every
        key, in ascending key order. Every function is traced."""
        return lambda dataset: _group_by_reducer(dataset, key_func, reducer)

    @staticmethod
    def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                                  padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False):
        """tf.data.experimental.bucket_by_sequence_length: group_by_window by length
        bucket, each group padded_batch'ed (batch'ed with no_padding)."""
        return lambda dataset: _bucket_by_sequence_length(
            dataset, element_length_func, bucket_boundaries, bucket_batch_sizes,
            padded_shapes, padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)
