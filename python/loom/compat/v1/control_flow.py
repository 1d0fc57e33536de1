"""tf.cond and tf.case: not available (tf.while_loop is: _while_loop.py). Loom's graph
runtime has no Switch / Merge with dead-tensor propagation, and
nothing here fakes them: evaluating both branches and selecting would run the side
effects (assignments, queue reads, errors) of the branch TF skips, and unrolling a loop
needs a trip count known when the graph is built. Each raises NotImplementedError naming
the workaround (docs/python.md, "Control flow").

tf.contrib.framework.smart_cond is supported where TF resolves it while building the
graph: a Python bool or a constant boolean tensor picks one branch, built alone, as TF's
smart_cond does."""
from loom.compat.v1 import _framework as _fw

_WHY = ("Loom's graph has no control-flow ops (Switch/Merge or While), so the branch or "
        "loop cannot be decided while the graph runs")


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """tf.cond: NotImplementedError (see the module comment)."""
    raise NotImplementedError(
        "tf.cond is not supported: %s. Workarounds: for an elementwise or whole-tensor "
        "select of two values that are safe to compute both, tf.where(pred, x, y) (both "
        "sides run); for a choice known when the graph is built (a Python bool, the "
        "Estimator's mode), a Python `if` or tf.contrib.framework.smart_cond; for a "
        "choice made per step, build both subgraphs and choose which to fetch in "
        "session.run." % _WHY)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """tf.case: NotImplementedError (see the module comment)."""
    raise NotImplementedError(
        "tf.case is not supported: %s. Workarounds: nested tf.where selects when every "
        "branch is safe to compute, or a Python choice when the predicate is known while "
        "building the graph." % _WHY)


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
    pred is a Python bool or a constant tensor; otherwise it would need tf.cond
    (NotImplementedError)."""
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
