"""tf.py_func and tf.numpy_function: a graph op that calls a Python function.

The node holds the function itself (python/src/bind_py_func.cc); each run of the op takes
the GIL, calls it with the inputs as numpy values (a numpy scalar, or bytes for a string,
at rank 0) and returns its results as the op's outputs. As in TF:
- `Tout` is a dtype (one tensor comes back) or a list of dtypes (a list comes back; an
  empty list gives the Operation); each result must have its declared dtype (a float64
  array for a float32 Tout is an InvalidArgumentError, not a cast);
- the outputs' shapes are unknown; call `set_shape` on them;
- an exception in the function is a tf.errors error at Session.run with the Python
  traceback in its message: ValueError and TypeError are InvalidArgumentError,
  StopIteration OutOfRangeError, MemoryError ResourceExhaustedError, NotImplementedError
  UnimplementedError, anything else UnknownError;
- no gradient flows through it: tf.gradients gives None for what reaches the loss only
  through a py_func;
- the function is not serialized: Saver.save writes the .meta graph without it, and
  importing that graph fails naming the op PyFunc (rebuild the graph in Python).
Inside `Dataset.map` the op is traced once like any other, and the function is called
once per element from the pipeline's threads."""
import atexit

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes

# A pipeline thread still calling a py_func at exit must not wait for the GIL while the
# interpreter finalizes (python/src/bind_py_func.cc).
atexit.register(_loom.py_func_shutdown)


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803  (TF's name)
    """tf.py_func / tf.compat.v1.py_func."""
    graph = _fw.get_default_graph()
    if graph._g.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    inputs = [_fw.convert_to_tensor(x) for x in inp]
    is_list = isinstance(Tout, (list, tuple))
    touts = [_dtypes.as_dtype(t)._enum for t in (Tout if is_list else [Tout])]
    op_name = graph.unique_name(name or ("PyFunc" if stateful else "PyFuncStateless"))
    node = _loom.add_py_func(graph._g, op_name, [t._out for t in inputs], func, touts,
                             bool(stateful), [])
    op = graph._operation(node)
    if not is_list:
        return op.outputs[0]
    return op.outputs if touts else op


def numpy_function(func, inp, Tout, name=None):  # noqa: N803
    """tf.numpy_function: py_func, always stateful (as TF)."""
    return py_func(func, inp, Tout, stateful=True, name=name)
