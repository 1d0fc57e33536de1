"""tf.while_loop over Loom's functional While op (loom/runtime/while_loop.h), and tf.map_fn,
tf.scan, tf.foldl and tf.foldr on top of it.

The loop's cond and body are Python functions traced once into the graph, inside the
loop's name scope, between the loop variables and the While node; variables, layers and
collections made there are ordinary graph members. Gradients flow through the loop
(tf.gradients, optimizers) unless back_prop=False.

A tf.TensorArray is a loop variable like any other: its two tensors (_tensor_array.py)
are loop variables, with the invariants the TensorArray gives them.

map_fn, scan and dynamic_rnn collect the per-iteration values in a TensorArray's two
tensors (loop variables of unknown rank and length), stacked after the loop. A write
fills the array's storage in place, so collecting n values costs O(n) element copies, and
the loop's gradient record holds one storage rather than one copy per iteration."""

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1._nest import flatten as _flatten
from loom.compat.v1._nest import is_composite as _is_composite
from loom.compat.v1._nest import is_sequence as _is_sequence
from loom.compat.v1._nest import pack_sequence_as as _pack


# --- nested structures (TF's nest, for lists, tuples, namedtuples and dicts) ------------
def _assert_same_structure(a, b, what):
    fa, fb = _flatten(a), _flatten(b)
    if len(fa) != len(fb):
        raise ValueError("%s: the body returned %d values (%r) for %d loop variables (%r)"
                         % (what, len(fb), b, len(fa), a))


def _flatten_up_to(structure, value, what):
    """`value`'s entries at the leaves of `structure` (a shape stays one leaf; a
    TensorArray's invariants are its own, whatever `value` says there, as TF's)."""
    if _is_composite(structure):
        return structure._composite_invariants()
    if isinstance(structure, dict):
        return [x for k in sorted(structure) for x in _flatten_up_to(structure[k], value[k], what)]
    if isinstance(structure, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(structure):
            raise ValueError("%s does not match the structure of loop_vars: %r vs %r"
                             % (what, value, structure))
        return [x for s, v in zip(structure, value) for x in _flatten_up_to(s, v, what)]
    return [value]


def _composite_invariants(structure):
    """Per leaf of flatten(structure): a TensorArray tensor's invariant, or False (the
    initial value's shape) for any other leaf."""
    if _is_composite(structure):
        return structure._composite_invariants()
    if isinstance(structure, dict):
        return [x for k in sorted(structure) for x in _composite_invariants(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [x for item in structure for x in _composite_invariants(item)]
    return [False]


def _invariant(shape):
    """A shape invariant for the builder: None is an unknown rank (as TF's
    TensorShape(None))."""
    return _fw.TensorShape(shape).dims


# --- tf.while_loop ------------------------------------------------------------------------
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """tf.while_loop: repeats `body` while `cond` is true, over (nested) loop_vars."""
    if not callable(cond) or not callable(body):
        raise TypeError("cond and body must be callable")
    if parallel_iterations is not None and int(parallel_iterations) < 1:
        raise ValueError("parallel_iterations must be a positive integer")
    structure = loop_vars
    flat = [_fw.convert_to_tensor(v) for v in _flatten(loop_vars)]
    if not flat:
        raise ValueError("No loop variables provided")
    graph = flat[0].graph
    # False: the initial value's shape
    invariants = [s if s is False else _invariant(s) for s in _composite_invariants(loop_vars)]
    if shape_invariants is not None:
        flat_inv = _flatten_up_to(loop_vars, shape_invariants, "shape_invariants")
        invariants = [_invariant(s) for s in flat_inv]
    max_iter = -1
    if maximum_iterations is not None:
        from loom.compat.v1 import _ops
        static = _ops.constant_value(maximum_iterations) if isinstance(
            maximum_iterations, _fw.Tensor) else maximum_iterations
        if static is None:
            # A computed bound: a hidden counter loop variable, tested beside cond (as TF).
            tf = _tf()
            bound = tf.cast(maximum_iterations, tf.int64)

            def counted_cond(i, *v):
                return tf.logical_and(i < bound, cond(*_unpacked(structure, v)))

            def counted_body(i, *v):
                return [i + 1] + _flatten(_body_result(body, structure, v))

            out = while_loop(counted_cond, counted_body,
                             [tf.constant(0, dtype=tf.int64)] + flat,
                             shape_invariants=[[]] + [t.shape if s is False else s for t, s in
                                                      zip(flat, invariants)],
                             parallel_iterations=parallel_iterations, back_prop=back_prop,
                             name=name, return_same_structure=True)[1:]
            if return_same_structure or len(out) != 1:
                return _pack(structure, out) if _is_sequence(structure) or \
                    _is_composite(structure) else out[0]
            return out[0]
        max_iter = int(static)
        if max_iter < 0:
            raise ValueError("maximum_iterations must be non-negative, got %d" % max_iter)
    builder = _loom.WhileBuilder(
        graph._g, graph.get_name_scope(), graph._current_control_nodes(),
        [t._out for t in flat], invariants, max_iter,
        10 if parallel_iterations is None else int(parallel_iterations), bool(back_prop),
        name or "while")
    inside = [graph._tensor(o) for o in builder.loop_vars]
    packed = _pack(structure, inside)
    args = packed if isinstance(structure, (list, tuple)) and not hasattr(structure, "_fields") \
        else [packed]
    with graph.name_scope(builder.prefix + "/"):
        c = _fw.convert_to_tensor(cond(*args))
        result = body(*args)
        if not _is_sequence(result) and len(flat) == 1:
            result = [result]
        if len(flat) == 1 and isinstance(result, (list, tuple)) and len(result) == 1 and \
                not _is_sequence(structure):
            result = result[0]
        _assert_same_structure(structure, result, "tf.while_loop")
        outs = []
        for i, v in enumerate(_flatten(result)):
            v = _fw.convert_to_tensor(v, dtype=flat[i].dtype) if not isinstance(v, _fw.Tensor) \
                else v
            outs.append(v)
    finals = [graph._tensor(o) for o in builder.finish(c._out, [v._out for v in outs])]
    if return_same_structure or len(finals) != 1:
        return _pack(structure, finals) if _is_sequence(structure) or \
            _is_composite(structure) else finals[0]
    return finals[0]


def _unpacked(structure, flat):
    """cond's / body's arguments for loop variables `flat` of `structure`."""
    packed = _pack(structure, list(flat))
    if isinstance(structure, (list, tuple)) and not hasattr(structure, "_fields"):
        return list(packed)
    return [packed]


def _body_result(body, structure, flat):
    result = body(*_unpacked(structure, flat))
    if not _is_sequence(structure) and isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


# --- map_fn, scan, foldl, foldr --------------------------------------------------------------
def _tf():
    from loom.compat import v1
    return v1


def _length(elems_flat):
    """elems' first dimension: a scalar int64 tensor and its static value (or None)."""
    tf = _tf()
    dims = elems_flat[0].shape.dims
    if not dims:
        raise ValueError("elems must have a first dimension to loop over, got shape %s"
                         % elems_flat[0].shape)
    return tf.shape(elems_flat[0], out_type=tf.int64)[0], dims[0]


def _collector_vars(tf, n, dtype, first=None, first_index=None):
    """The two loop variables of one collection of n values (a TensorArray's data and
    written mask, loom/ops/tensor_array.h): empty, or holding `first` at `first_index`."""
    from loom.compat.v1 import _ops
    written = _ops.raw_ops.FillDynamic(tf.reshape(n, [1]), tf.constant(0, dtype=tf.int64))
    data = tf.zeros([0], dtype=dtype)  # the empty array's placeholder
    if first is None:
        return [data, written]
    return list(_collect(tf, data, written, first_index, first))


def _collect(tf, data, written, index, value):
    """The collection with `value` at `index`: one element copied into the collection's
    storage (in place after the first write), so n values cost O(n) element copies, and
    a loop's gradient record keeps one storage, not one copy per iteration."""
    from loom.compat.v1 import _ops
    return _ops.raw_ops.TensorArrayWrite(data, written, index, value,
                                         tensor_array_name="collection", dynamic_size=False)


def _stacked(tf, data, written, n_static, like):
    """The collected values as [n] + the element shape; `like` is the traced element."""
    from loom.compat.v1 import _ops
    out = _ops.raw_ops.TensorArrayStack(data, written, tensor_array_name="collection")
    static = like.shape.dims
    if static is not None and all(d is not None for d in static):
        if out.shape.ndims != 1 + len(static):  # the empty array's placeholder
            out = tf.reshape(out, [-1] + static)
    if static is not None:
        out.set_shape([n_static] + static)
    return out


def _loop_over_elements(fn, elems, state, reverse, back_prop, parallel_iterations, collect,
                        check):
    """The loop behind map_fn, scan, foldl and foldr: state = fn(state, element) for each
    element along elems' first dimension (last to first when reverse), starting at the
    first (last) element when `state` is None. With `collect`, also the stacked states
    in elems' order. Returns (final state, stacked states or None)."""
    tf = _tf()
    elems_flat = [_fw.convert_to_tensor(e) for e in _flatten(elems)]
    n, n_static = _length(elems_flat)
    start = tf.constant(0, dtype=tf.int64)
    if state is None:
        state = _pack(elems, [tf.gather(e, n - 1 if reverse else 0) for e in elems_flat])
        start = tf.constant(1, dtype=tf.int64)
        first = True
    else:
        first = False
    state_flat = [_fw.convert_to_tensor(s) for s in _flatten(state)]
    k = len(state_flat)
    traced = {}

    def cond(i, *rest):
        return tf.less(i, n)

    def body(i, *rest):
        st = _pack(state, list(rest[:k]))
        x = _pack(elems, [tf.gather(e, n - 1 - i if reverse else i) for e in elems_flat])
        new = fn(st, x)
        check(state, new)
        new_flat = [_fw.convert_to_tensor(v, dtype=s.dtype) for v, s in
                    zip(_flatten(new), state_flat)]
        traced["elements"] = new_flat
        out = [i + 1] + new_flat
        for j, v in enumerate(new_flat if collect else []):
            out += list(_collect(tf, rest[k + 2 * j], rest[k + 2 * j + 1], n - 1 - i if reverse
                                 else i, v))
        return out

    loop_vars = [start] + state_flat
    invariants = [start.shape] + [s.shape for s in state_flat]
    for s in state_flat if collect else []:
        loop_vars += _collector_vars(tf, n, s.dtype, s if first else None,
                                     n - 1 if reverse else tf.constant(0, dtype=tf.int64))
        invariants += [None, [None]]
    results = while_loop(cond, body, loop_vars, shape_invariants=invariants,
                         parallel_iterations=parallel_iterations, back_prop=back_prop,
                         name="while", return_same_structure=True)
    final = _pack(state, list(results[1:1 + k]))
    if not collect:
        return final, None
    stacked = [_stacked(tf, results[1 + k + 2 * j], results[2 + k + 2 * j], n_static, like)
               for j, like in enumerate(traced["elements"])]
    return final, _pack(state, stacked)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None):
    """tf.map_fn: fn applied to each element along elems' first dimension, stacked."""
    tf = _tf()
    elems_flat = [_fw.convert_to_tensor(e) for e in _flatten(elems)]
    if dtype is None:
        dtype = _pack(elems, [e.dtype for e in elems_flat])
    with tf.name_scope(name or "map"):
        n, n_static = _length(elems_flat)
        out_dtypes = [tf.as_dtype(d) for d in _flatten(dtype)]
        traced = {}

        def cond(i, *accs):
            return tf.less(i, n)

        def body(i, *accs):
            x = _pack(elems, [tf.gather(e, i) for e in elems_flat])
            new_flat = [_fw.convert_to_tensor(v) for v in _flatten(fn(x))]
            if len(new_flat) != len(out_dtypes):
                raise ValueError("map_fn: fn returned %d values, but dtype names %d; pass dtype "
                                 "when fn's output structure differs from elems'"
                                 % (len(new_flat), len(out_dtypes)))
            for v, d in zip(new_flat, out_dtypes):
                if v.dtype != d:
                    raise ValueError("map_fn: fn returned a %s value where dtype says %s; pass "
                                     "dtype=" % (v.dtype.name, d.name))
            traced["elements"] = new_flat
            out = [i + 1]
            for j, v in enumerate(new_flat):
                out += list(_collect(tf, accs[2 * j], accs[2 * j + 1], i, v))
            return out

        loop_vars = [tf.constant(0, dtype=tf.int64)]
        invariants = [[]]
        for d in out_dtypes:
            loop_vars += _collector_vars(tf, n, d)
            invariants += [None, [None]]
        results = while_loop(cond, body, loop_vars, shape_invariants=invariants,
                             parallel_iterations=parallel_iterations, back_prop=back_prop,
                             name="while", return_same_structure=True)
        stacked = [_stacked(tf, results[1 + 2 * j], results[2 + 2 * j], n_static, like)
                   for j, like in enumerate(traced["elements"])]
        return _pack(dtype, stacked)


def _same_structure_as_state(what):
    def check(state, new):
        _assert_same_structure(state, new, what)
    return check


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """tf.scan: the states fn(state, element) takes along elems' first dimension, stacked."""
    with _tf().name_scope(name or "scan"):
        return _loop_over_elements(fn, elems, initializer, reverse, back_prop,
                                   parallel_iterations, True,
                                   _same_structure_as_state("tf.scan"))[1]


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
          name=None):
    """tf.foldl: fn(state, element) folded from the first element to the last."""
    with _tf().name_scope(name or "foldl"):
        return _loop_over_elements(fn, elems, initializer, False, back_prop,
                                   parallel_iterations, False,
                                   _same_structure_as_state("tf.foldl"))[0]


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
          name=None):
    """tf.foldr: fn(state, element) folded from the last element to the first."""
    with _tf().name_scope(name or "foldr"):
        return _loop_over_elements(fn, elems, initializer, True, back_prop,
                                   parallel_iterations, False,
                                   _same_structure_as_state("tf.foldr"))[0]
