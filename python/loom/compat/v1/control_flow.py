"""tf.cond, tf.case and smart_cond run on Loom's Switch / Merge ops (loom/ops/control.h):
only the branch the predicate picks runs, so its assignments, summaries and random draws
happen and the other branch's do not. Each branch function is called once, while the graph
is built, inside a build context that puts every tensor from outside the branch through a
Switch and hangs ops without inputs on the branch's pivot; the C++ layers (tf.layers) built
inside a branch see the same context. Variables made inside a branch are built outside it
(as TF1's get_variable and tf.Variable with a callable initial value do).

tf.while_loop is Loom's functional While op (_while_loop.py, docs/python.md, "Control
flow")."""
from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1._nest import flatten as _flatten
from loom.compat.v1._nest import pack_sequence_as as _pack


def _shape_of(structure):
    """The nest's shape without its leaves, to compare the branches' structures."""
    if isinstance(structure, dict):
        return ("dict", tuple((k, _shape_of(structure[k])) for k in sorted(structure)))
    if isinstance(structure, (list, tuple)):
        return ("seq", tuple(_shape_of(item) for item in structure))
    return "leaf"


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """tf.cond(pred, true_fn=None, false_fn=None, strict=False, name=None): true_fn()'s
    results when the boolean scalar `pred` is true at run time, else false_fn()'s; only
    that branch's ops run. Both must return the same structure (nested lists, tuples,
    dicts) of tensors with matching dtypes; an Operation in a result becomes a boolean
    tensor that has run it (as TF1's). Unless `strict`, a one-element list or tuple
    result comes back as its element. `fn1` / `fn2` are the deprecated names."""
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    graph = _fw.get_default_graph()
    if graph._g.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    pred = _fw.convert_to_tensor(pred)
    if pred.dtype.name != "bool":
        raise TypeError("pred must be a boolean tensor, got %s of dtype %s" %
                        (pred.name, pred.dtype.name))
    built = {}

    def branch(fn, key):
        def build(prefix):
            with graph.name_scope(prefix + "/"):
                result = fn()
                if result is None:
                    raise ValueError("%s must have a return value." % key)
                leaves = []
                for leaf in _flatten(result):
                    if isinstance(leaf, _fw.Operation):
                        # TF1 stands in for an op with the pivot under a dependency on it.
                        with graph.control_dependencies([leaf]):
                            leaf = _fw.constant(True, name="op_done")
                    leaves.append(_fw.convert_to_tensor(leaf))
            built[key] = result
            if key == "false_fn" and _shape_of(result) != _shape_of(built["true_fn"]):
                raise ValueError("true_fn and false_fn must return the same structure: %r vs %r"
                                 % (built["true_fn"], result))
            return [t._out for t in leaves]
        return build

    outs = _loom.cond(graph._g, graph.get_name_scope(), graph._current_control_nodes(),
                      name or "cond", pred._out, branch(true_fn, "true_fn"),
                      branch(false_fn, "false_fn"))
    merged = [graph._tensor(o) for o in outs]
    result = _pack(built["true_fn"], merged)
    if not strict and isinstance(result, (list, tuple)) and not hasattr(result, "_fields") \
            and len(result) == 1:
        return result[0]
    return result


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """tf.case(pred_fn_pairs, default=None, exclusive=False, strict=False, name='case'):
    the results of the first fn whose predicate is true, else default()'s, built as
    nested tf.cond (TF1's construction: only the chosen fn's ops run). Without `default`
    the last pair's fn is the default. Differences: TF1 also asserts at run time that a
    predicate is true when there is no default, and that at most one is when `exclusive`;
    Loom has no assertion ops, so it checks neither and the first true predicate wins."""
    if isinstance(pred_fn_pairs, dict):
        pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, (list, tuple)):
        pairs = list(pred_fn_pairs)
    else:
        raise TypeError("fns must be a list, tuple, or dict")
    if not pairs:
        if default is None:
            raise ValueError("Must provide at least one item in pred_fn_pairs or a default")
        with _fw.name_scope(name):
            return default()
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if not isinstance(pred, _fw.Tensor) or pred.dtype.name != "bool":
            raise TypeError("pred must be Tensor of type bool: %r" % (pred,))
        if not callable(fn):
            raise TypeError("fn for pred %s must be callable." % pred.name)
    if default is None:
        pairs, default = pairs[:-1], pairs[-1][1]
    elif not callable(default):
        raise TypeError("default must be callable.")
    with _fw.name_scope(name):
        fn = default
        for i, (pred, action) in reversed(list(enumerate(pairs))):
            fn = _case_step(pred, action, fn, strict, "If_%d" % i)
        return fn()


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """tf.switch_case(branch_index, branch_fns, default=None, name='switch_case'): the
    results of branch_fns[branch_index] (a list of callables, or (index, callable) pairs or
    a dict of them), else default()'s (the largest index's fn when default is None), built
    as tf.case over branch_index == k."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and \
            all(isinstance(b, tuple) and len(b) == 2 for b in branch_fns):
        items = sorted(branch_fns)
    elif isinstance(branch_fns, (list, tuple)):
        items = list(enumerate(branch_fns))
    else:
        raise TypeError("branch_fns must be a list, tuple, or dict")
    if not items:
        raise ValueError("Must provide at least one item in branch_fns")
    for k, fn in items:
        if not isinstance(k, int) or not callable(fn):
            raise TypeError("branch_fns entries must be (int, callable), got %r" % ((k, fn),))
    with _fw.name_scope(name):
        index = _fw.convert_to_tensor(branch_index)
        if index.dtype.name != "int32":
            raise TypeError("branch_index must be an int32 scalar, got %s" % index.dtype.name)
        from loom.compat.v1 import _ops
        equal = _ops.NAMESPACES[""]["equal"]
        if default is None:
            items, default = items[:-1], items[-1][1]
        pairs = [(equal(index, _fw.constant(k, name="index_%d" % k)), fn) for k, fn in items]
        if not pairs:
            return default()
        return case(pairs, default=default, name="case")


def _case_step(pred, true_fn, false_fn, strict, name):
    return lambda: cond(pred, true_fn, false_fn, strict=strict, name=name)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,  # noqa: A002
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """tf.while_loop: Loom's functional While op (_while_loop.py)."""
    from loom.compat.v1 import _while_loop
    return _while_loop.while_loop(cond, body, loop_vars, shape_invariants, parallel_iterations,
                                  back_prop, swap_memory, name, maximum_iterations,
                                  return_same_structure)


def smart_cond(pred, true_fn=None, false_fn=None, name=None):
    """tf.contrib.framework.smart_cond: builds only true_fn's or false_fn's subgraph when
    pred is a Python bool or a constant tensor; otherwise tf.cond."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn must be callable.")
    value = pred
    if isinstance(pred, _fw.Tensor):
        from loom.compat.v1 import _ops
        value = _ops.constant_value(pred)
        if value is None:
            return cond(pred, true_fn, false_fn, name=name)
        value = bool(value)
    if not isinstance(value, bool):
        import numpy as np
        if isinstance(value, np.bool_):
            value = bool(value)
        else:
            raise TypeError("pred must be a Python bool or a boolean tensor, got %r" % (pred,))
    return true_fn() if value else false_fn()
