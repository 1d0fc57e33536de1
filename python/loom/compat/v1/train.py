"""tf.train: optimizers (the C++ ones: update kernels, slots and the global-step increment
live there), the global step, the learning-rate schedules, Saver (a safetensors
checkpoint plus a ".meta" graph beside it) and checkpoint lookup. Hooks,
SessionRunArgs and MonitoredTrainingSession come from train_hooks.py, re-exported here."""
import numbers
import os

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _variables
from loom.compat.v1.train_hooks import *  # noqa: F401,F403
from loom.compat.v1._checkpoint_utils import (  # noqa: F401
    CheckpointReader, ExponentialMovingAverage, NewCheckpointReader, assign_moving_average,
    init_from_checkpoint, list_variables, load_checkpoint, load_variable)


class IndexedSlices:
    """tf.IndexedSlices: a sparse gradient (rows `values` at `indices`)."""

    def __init__(self, values, indices, dense_shape=None):
        self.values = values
        self.indices = indices
        self.dense_shape = dense_shape

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def graph(self):
        return self.values.graph


def _hyper(value):
    if callable(value):
        value = value()
    if isinstance(value, _fw.Tensor):
        return value._out
    return float(value)


def _out_or_none(t):
    return None if t is None else _fw.convert_to_tensor(t)._out


def _var_outs(graph, var_list):
    """The C++ optimizers' var_list: [] means every trainable variable there, so an empty
    list given here (TF 1.15's ValueError) must not reach it."""
    if var_list is None:
        if not graph._g.trainable_variables():
            raise ValueError("No variables to optimize.")
        return []
    var_list = list(var_list)
    if not var_list:
        raise ValueError("No variables to optimize.")
    return [v._out for v in var_list]


def _reaches(node, ids):
    """Whether `node` depends (through data inputs) on a node whose id is in `ids`."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n.id in ids:
            return True
        if n.id in seen:
            continue
        seen.add(n.id)
        stack.extend(i.node for i in n.inputs)
    return False


class Optimizer:
    """tf.train.Optimizer over a C++ optimizer (made at first use, when the
    hyperparameters, which may be tensors, are known)."""
    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        self._name = name
        self._native = None

    def get_name(self):
        return self._name

    def _make(self):
        raise NotImplementedError

    def _opt(self):
        if self._native is None:
            self._native = self._make()
        return self._native

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        if grad_loss is not None:
            raise NotImplementedError("compute_gradients(grad_loss=...) is not supported")
        loss = _fw.convert_to_tensor(loss)
        graph = loss.graph
        vars_ = _var_outs(graph, var_list)
        pairs = self._opt().compute_gradients(graph._g, graph.get_name_scope(), loss._out, vars_)
        out = []
        for grad, var in pairs:
            if grad is None:
                g = None
            elif isinstance(grad, tuple):
                g = IndexedSlices(graph._tensor(grad[1]), graph._tensor(grad[0]),
                                  graph._tensor(grad[2]))
            else:
                g = graph._tensor(grad)
            out.append((g, _variables._wrap_variable(graph, var.node)))
        return out

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        pairs = []
        graph = None
        for g, v in grads_and_vars:
            graph = graph or v.graph
            if g is None:
                native = None
            elif isinstance(g, IndexedSlices):
                native = (g.indices._out, g.values._out, g.dense_shape._out)
            else:
                native = _fw.convert_to_tensor(g)._out
            pairs.append((native, v._out))
        if not pairs:
            raise ValueError("No variables provided.")
        node = self._opt().apply_gradients(graph._g, graph.get_name_scope(), pairs,
                                           _out_or_none(global_step))
        return _variables._apply_constraints(
            graph._operation(node), [v for g, v in grads_and_vars if g is not None])

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """Gradients of `loss` and their updates in one op; increments global_step."""
        if grad_loss is not None:
            raise NotImplementedError("minimize(grad_loss=...) is not supported")
        loss = _fw.convert_to_tensor(loss)
        graph = loss.graph
        if graph.__dict__.get("_constraints"):
            # Which variables get updates decides which constraints apply, as in TF.
            return self.apply_gradients(self.compute_gradients(loss, var_list), global_step,
                                        name)
        vars_ = _var_outs(graph, var_list)
        candidates = [o.node for o in vars_] if vars_ else graph._g.trainable_variables()
        if not _reaches(loss._out.node, set(n.id for n in candidates)):
            # TF 1.15's minimize: nothing to update is an error, not a no-op train_op.
            raise ValueError("No gradients provided for any variable, check your graph for ops "
                             "that do not support gradients, between variables %s and loss %s."
                             % ([n.name for n in candidates], loss))
        node = self._opt().minimize(graph._g, graph.get_name_scope(), loss._out,
                                    _out_or_none(global_step), vars_)
        return graph._operation(node)

    def get_slot(self, var, name):
        s = self._opt().get_slot(var._out, name)
        return None if s is None else _variables._wrap_variable(var.graph, s.node)

    def get_slot_names(self):
        return self._opt().get_slot_names()


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._lr = learning_rate

    def _make(self):
        return _loom.gradient_descent(_hyper(self._lr), self._name)


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._lr, self._momentum, self._nesterov = learning_rate, momentum, use_nesterov

    def _make(self):
        return _loom.momentum(_hyper(self._lr), _hyper(self._momentum), self._nesterov, self._name)


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._args = (learning_rate, beta1, beta2, epsilon)

    def _make(self):
        lr, b1, b2, eps = self._args
        return _loom.adam(_hyper(lr), float(b1), float(b2), float(eps), self._name)


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        super().__init__(use_locking, name)
        self._args = (learning_rate, initial_accumulator_value)

    def _make(self):
        return _loom.adagrad(_hyper(self._args[0]), float(self._args[1]), self._name)


class RMSPropOptimizer(Optimizer):
    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._args = (learning_rate, decay, momentum, epsilon, centered)

    def _make(self):
        lr, decay, momentum, eps, centered = self._args
        return _loom.rmsprop(_hyper(lr), float(decay), float(momentum), float(eps),
                             bool(centered), self._name)


class FtrlOptimizer(Optimizer):
    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0):
        super().__init__(use_locking, name)
        if l2_shrinkage_regularization_strength:
            raise NotImplementedError("Ftrl's l2_shrinkage_regularization_strength")
        self._args = (learning_rate, learning_rate_power, initial_accumulator_value,
                      l1_regularization_strength, l2_regularization_strength)

    def _make(self):
        lr, power, init, l1, l2 = self._args
        return _loom.ftrl(_hyper(lr), float(power), float(init), float(l1), float(l2), self._name)


# --- the global step ----------------------------------------------------------------------
def get_or_create_global_step(graph=None):
    """The int64 scalar "global_step" variable, in the graph's GLOBAL_STEP collection."""
    graph = graph or _fw.get_default_graph()
    out, init = _loom.get_or_create_global_step(graph._g)
    return _variables._wrap_variable(graph, out.node)


def create_global_step(graph=None):
    graph = graph or _fw.get_default_graph()
    if _loom.get_global_step(graph._g) is not None:
        raise ValueError('"global_step" already exists.')
    return get_or_create_global_step(graph)


def get_global_step(graph=None):
    graph = graph or _fw.get_default_graph()
    out = _loom.get_global_step(graph._g)
    return None if out is None else _variables._wrap_variable(graph, out.node)


def global_step(sess, global_step_tensor):
    return int(sess.run(global_step_tensor))


# --- learning-rate schedules -------------------------------------------------------------
def _rate_decay(bind, default_name, learning_rate, global_step, decay_steps, decay_rate,
                staircase, name):
    """The schedules of (learning_rate, decay_steps, decay_rate, staircase)."""
    g = _fw.get_default_graph()
    step = _fw.convert_to_tensor(global_step)
    out = bind(g._g, g.get_name_scope(), name or default_name, _hyper(learning_rate), step._out,
               int(decay_steps), float(decay_rate), bool(staircase))
    return g._tensor(out)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """lr * decay_rate ^ (global_step / decay_steps), floored if staircase."""
    return _rate_decay(_loom.exponential_decay, "ExponentialDecay", learning_rate, global_step,
                       decay_steps, decay_rate, staircase, name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """lr / (1 + decay_rate * global_step / decay_steps), the quotient floored if staircase."""
    return _rate_decay(_loom.inverse_time_decay, "InverseTimeDecay", learning_rate, global_step,
                       decay_steps, decay_rate, staircase, name)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """lr * exp(-decay_rate * global_step / decay_steps), the quotient floored if staircase."""
    return _rate_decay(_loom.natural_exp_decay, "NaturalExpDecay", learning_rate, global_step,
                       decay_steps, decay_rate, staircase, name)


def piecewise_constant(x, boundaries, values, name=None):
    g = _fw.get_default_graph()
    step = _fw.convert_to_tensor(x)
    out = _loom.piecewise_constant(g._g, g.get_name_scope(), name or "PiecewiseConstant",
                                   step._out, [int(b) for b in boundaries],
                                   [float(v) for v in values])
    return g._tensor(out)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    g = _fw.get_default_graph()
    step = _fw.convert_to_tensor(global_step)
    out = _loom.polynomial_decay(g._g, g.get_name_scope(), name or "PolynomialDecay",
                                 _hyper(learning_rate), step._out, int(decay_steps),
                                 float(end_learning_rate), float(power), bool(cycle))
    return g._tensor(out)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    g = _fw.get_default_graph()
    step = _fw.convert_to_tensor(global_step)
    out = _loom.cosine_decay(g._g, g.get_name_scope(), name or "CosineDecay",
                             _hyper(learning_rate), step._out, int(decay_steps), float(alpha))
    return g._tensor(out)


# --- Saver and checkpoints ----------------------------------------------------------------
class Saver:
    """tf.train.Saver: save writes "<path>-<step>.safetensors" (Loom's checkpoint format,
    docs/formats/checkpoint.md), TF's `checkpoint` state file, and the graph as
    "<path>-<step>.meta" (a binary GraphDef; large constants in a sidecar)."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=2, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        graph = _fw.get_default_graph()
        names = []
        # {name in the checkpoint: variable}, as TF: restore reads each variable from its
        # key (the pretrained-weights pattern); save under other names is not supported.
        self._name_map = {}
        if isinstance(var_list, dict):
            for key, v in var_list.items():
                if not isinstance(key, str) or not hasattr(v, "_out"):
                    raise TypeError("Saver(var_list=dict) maps checkpoint names (str) to "
                                    "variables, got %r: %r" % (key, v))
                own = v._out.node.name
                names.append(own)
                if key != own:
                    self._name_map[own] = key
        elif var_list is not None:
            names = [v._out.node.name for v in var_list]
        # TF 1.15: nothing to save is a ValueError, or with allow_empty a Saver whose save
        # and restore do nothing. The C++ Saver reads an empty list as every variable, so
        # an empty var_list must not reach it.
        self._is_empty = not names if var_list is not None else not any(
            not n.attrs.get("local", False) for n in graph._g.variables())
        if self._is_empty and not allow_empty:
            raise ValueError("No variables to save")
        self._graph = graph
        self._native = _loom.Saver(graph._g, names, int(max_to_keep or 0),
                                   float(keep_checkpoint_every_n_hours))

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        if self._name_map:
            raise NotImplementedError(
                "Saver(var_list={name: variable}) restores variables from other names but "
                "cannot save under them (%s); save with a Saver over the variables' own names "
                "(tf.train.Saver(var_list=[...]))" % ", ".join(
                    "%s as %s" % kv for kv in sorted(self._name_map.items())))
        if self._is_empty:
            return None
        if global_step is not None:
            global_step = int(global_step if isinstance(global_step, numbers.Integral)
                              else sess.run(global_step))
        before = self._native.last_checkpoints
        path = self._native.save(sess._native, save_path, global_step)
        if write_meta_graph:
            _loom.export_graph(self._graph._g, path + "." + meta_graph_suffix)
        # The C++ Saver prunes the checkpoints past max_to_keep; their ".meta" graphs (and
        # a graph's large-constant sidecar) go with them, as TF deletes a checkpoint's
        # files together.
        kept = set(self._native.last_checkpoints)
        for old in before:
            if old in kept or os.path.exists(old + ".safetensors"):
                continue
            for f in (old + "." + meta_graph_suffix,
                      old + "." + meta_graph_suffix + ".data.safetensors"):
                if os.path.exists(f):
                    os.remove(f)
        return path

    def restore(self, sess, save_path):
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if self._is_empty:
            return
        self._native.restore(sess._native, save_path, self._name_map)

    @property
    def last_checkpoints(self):
        return self._native.last_checkpoints

    def recover_last_checkpoints(self, checkpoint_paths):
        self._native.recover_last_checkpoints(list(checkpoint_paths))

    def export_meta_graph(self, filename=None, **kwargs):
        return export_meta_graph(filename, graph=self._graph)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    return _loom.latest_checkpoint(checkpoint_dir)


class CheckpointState:
    """What tf.train.get_checkpoint_state returns: the `checkpoint` file's fields, the
    paths joined to its directory."""

    def __init__(self, fields):
        self.model_checkpoint_path = fields["model_checkpoint_path"]
        self.all_model_checkpoint_paths = list(fields["all_model_checkpoint_paths"])
        self.all_model_checkpoint_timestamps = list(fields["all_model_checkpoint_timestamps"])
        self.last_preserved_timestamp = fields["last_preserved_timestamp"]

    def __repr__(self):
        return "CheckpointState(model_checkpoint_path=%r, all_model_checkpoint_paths=%r)" % (
            self.model_checkpoint_path, self.all_model_checkpoint_paths)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """tf.train.get_checkpoint_state: the state file of checkpoint_dir, or None when it has
    none (a corrupt file is a DataLossError naming it)."""
    if latest_filename not in (None, "checkpoint"):
        raise NotImplementedError("get_checkpoint_state(latest_filename=%r): Loom's Saver "
                                  "writes the state file `checkpoint` only" % latest_filename)
    fields = _loom.read_checkpoint_state(checkpoint_dir)
    return None if fields is None else CheckpointState(fields)


def checkpoint_exists(checkpoint_prefix):
    return os.path.exists(checkpoint_prefix + ".safetensors") or os.path.exists(checkpoint_prefix)


def export_meta_graph(filename=None, graph=None, **kwargs):
    graph = graph or _fw.get_default_graph()
    if filename:
        _loom.export_graph(graph._g, filename)
    return filename


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Adds the graph in a ".meta" file to the default graph; returns a Saver over its
    variables (the file's variables come back as Variables, their initializers with
    them), and the tensors, operations and variables of its collections come back into
    tf.get_collection (as TF's collection_def)."""
    if import_scope:
        raise NotImplementedError("import_meta_graph(import_scope=...)")
    graph = _fw.get_default_graph()
    _loom.import_graph(graph._g, meta_graph_or_file)
    graph._adopt_native_collections()
    return Saver()


# --- queue runners: Loom has no queues; the TF1 boilerplate around them runs as a no-op ----
class Coordinator:
    """tf.train.Coordinator: a stop flag shared by threads."""

    def __init__(self, clean_stop_exception_types=None):
        import threading
        self._stop = threading.Event()
        self._exc = None

    def request_stop(self, ex=None):
        if ex is not None and self._exc is None:
            self._exc = ex
        self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def wait_for_stop(self, timeout=None):
        return self._stop.wait(timeout)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        for t in threads or ():
            t.join(stop_grace_period_secs)
        if self._exc is not None:
            raise self._exc

    def stop_on_exception(self):
        import contextlib

        @contextlib.contextmanager
        def cm():
            try:
                yield
            except Exception as e:  # noqa: BLE001  (TF's behaviour: any error stops)
                self.request_stop(e)
        return cm()


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection=None):
    """Loom's input pipelines are tf.data datasets; there are no queue runners to start."""
    return []
