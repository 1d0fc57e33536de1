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
    """tf.data.Dataset."""

    def __init__(self, native, template):
        self._native = native
        self._template = template

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
        return Dataset(native, self._template)

    def batch(self, batch_size, drop_remainder=False):
        """Stacks batch_size elements. A SparseTensor component of rank R becomes one of
        rank R + 1 (indices [n, R + 1] with the element's position first, dense_shape
        [batch, the largest of each dim]), as TF's: its three tensors are padded into one
        batch and joined by the SparseBatchPadded op; the dense components of such an
        element are padded too where their shapes differ (TF would fail)."""
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

    def _element_function(self, fn):
        """fn as a function of an element ({component: array}) returning a Dataset: called
        on constants of the values in a graph of its own."""
        template = self._template

        def call(values):
            graph = _fw.Graph()
            outer = getattr(_eager, "graph", None)
            with graph.as_default():
                args = _build(template, lambda n: _fw.constant(values[n]))
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
        """Traces map_func once into graph ops on the element (as TF1)."""
        graph, placeholders, result = self._trace(map_func)
        with graph.as_default():
            template, leaves = _flatten_values(result)
            outputs = {n: _fw.convert_to_tensor(v)._out for n, v in leaves.items()}
        native = self._native.map_traced(graph._g, placeholders, outputs,
                                         0 if num_parallel_calls is None else int(num_parallel_calls),
                                         True if deterministic is None else bool(deterministic))
        return Dataset(native, template)

    def filter(self, predicate):
        graph, placeholders, result = self._trace(predicate)
        with graph.as_default():
            pred = _fw.convert_to_tensor(result)
        return self._same(self._native.filter_traced(graph._g, placeholders, pred._out))

    # --- iterators --------------------------------------------------------------------
    def make_one_shot_iterator(self):
        graph = _fw.get_default_graph()
        it = self._native.make_one_shot_iterator(graph._g, graph.get_name_scope())
        return Iterator(graph, it, self._template)

    def make_initializable_iterator(self, shared_name=None):
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


class experimental:
    AUTOTUNE = AUTOTUNE
