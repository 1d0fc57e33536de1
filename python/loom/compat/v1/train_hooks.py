"""tf.train's hooks and MonitoredTrainingSession over Loom's C++ train layer
(loom/train/session_run_hook.h, basic_hooks.h, monitored_session.h).

A Python hook subclasses SessionRunHook with TF's signatures. When C++ runs it, it goes
through a trampoline (loom._loom.PyHook, python/src/bind_train.cc) that calls an adapter
here with the GIL held: the adapter turns the C++ graph and session into this package's
Graph and Session, and TF's nested fetches and feed_dicts into flat lists. The lifecycle
and its order are C++'s (TF's): begin, graph finalized, session created and restored,
after_create_session, then before_run / run / after_run per step, end at a clean stop
only. The built-in hooks are the C++ ones; `_native` holds each.

An exception raised in a hook ends training and reaches the caller as itself."""
import collections

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _session as _sess

__all__ = ["SessionRunArgs", "SessionRunValues", "SessionRunContext", "SessionRunHook",
           "StopAtStepHook", "StepCounterHook", "LoggingTensorHook", "CheckpointSaverHook",
           "SummarySaverHook", "NanTensorHook", "FinalOpsHook", "FeedFnHook",
           "GlobalStepWaiterHook", "ProfilerHook", "MonitoredTrainingSession",
           "SingularMonitoredSession", "CheckpointSaverListener"]


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """tf.train.SessionRunArgs(fetches, feed_dict=None, options=None). `options` is
    accepted and ignored (RunOptions tracing is not exposed to Python)."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """tf.train.SessionRunValues: `results` has the structure of the hook's fetches."""


class SessionRunContext:
    """tf.train.SessionRunContext: the step as a hook sees it."""

    def __init__(self, native, graph):
        self._native = native
        self._graph = graph

    @property
    def original_args(self):
        fetches = [self._graph._tensor(o) for o in self._native.original_fetches]
        fetches += [self._graph._operation(n) for n in self._native.original_targets]
        return SessionRunArgs(fetches)

    @property
    def session(self):
        return _wrap_session(self._native.session, self._graph)

    def request_stop(self):
        self._native.request_stop()

    @property
    def stop_requested(self):
        return self._native.stop_requested


class SessionRunHook:
    """tf.train.SessionRunHook: subclass it and override any of the five methods."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


# ---- graphs and sessions that C++ owns ------------------------------------------------

# C++ graphs (by address) -> the Graph wrapper the current build uses. An Estimator
# registers each graph it builds before calling Python on it (input_fn, model_fn, hooks)
# and drops them when its call returns; MonitoredTrainingSession registers the user's.
_graphs = {}


def _register_graph(graph):
    _graphs[_loom.graph_address(graph._g)] = graph
    return graph


def _graph_for(native_graph, fresh=False, prefix=""):
    """The package's Graph for a C++ graph: the registered one, or a new wrapper over it
    (borrowed: the C++ side owns it). `fresh` replaces any registered wrapper (a new
    build at an address a dead graph had)."""
    address = _loom.graph_address(native_graph)
    graph = None if fresh else _graphs.get(address)
    if graph is None:
        graph = _fw.Graph()
        graph._g = native_graph  # the throwaway graph Graph() made is dropped
        graph._name_stack = prefix
        _graphs[address] = graph
    return graph


def _release_graphs(graphs):
    for address in [a for a, g in _graphs.items() if g in graphs]:
        del _graphs[address]


def _wrap_session(native, graph):
    """A tf.Session over a C++ Session that C++ owns (hooks get the MonitoredSession's)."""
    return _sess.Session._wrap(native, graph)


class _HookAdapter:
    """What loom._loom.PyHook calls (see the module comment)."""

    def __init__(self, hook, graph_for):
        self._hook = hook
        self._graph_for = graph_for
        self._graph = None
        self._context = None
        self._mapper = None

    def begin(self, native_graph):
        self._graph = self._graph_for(native_graph)
        with self._graph.as_default():
            self._hook.begin()

    def after_create_session(self, native_session):
        with self._graph.as_default():
            self._hook.after_create_session(_wrap_session(native_session, self._graph), None)

    def before_run(self, native_context):
        self._context = SessionRunContext(native_context, self._graph)
        self._mapper = None
        with self._graph.as_default():
            args = self._hook.before_run(self._context)
        if args is None:
            return None
        if not isinstance(args, SessionRunArgs):
            raise TypeError("%s.before_run returned a %s; return a tf.train.SessionRunArgs "
                            "or None" % (type(self._hook).__name__, type(args).__name__))
        tensors, targets = [], []
        if args.fetches is not None:
            self._mapper = _sess._FetchMapper(self._graph, args.fetches)
            tensors, targets = self._mapper.tensors, self._mapper.targets
        feeds = _sess.BaseSession._feeds(_wrap_session(None, self._graph), args.feed_dict)
        return tensors, feeds, targets

    def after_run(self, native_context, results):
        if self._context is None or self._context._native is not native_context:
            self._context = SessionRunContext(native_context, self._graph)
        values = self._mapper.build(results) if self._mapper is not None else None
        with self._graph.as_default():
            self._hook.after_run(self._context, SessionRunValues(values, None, None))
        self._context = None

    def end(self, native_session):
        with self._graph.as_default():
            self._hook.end(_wrap_session(native_session, self._graph))


def _native_hooks(hooks, graph_for=_graph_for):
    """Hooks as the C++ objects the bindings take."""
    native = []
    for hook in hooks or ():
        if isinstance(hook, _loom.SessionRunHook):
            native.append(hook)
        elif getattr(hook, "_native", None) is not None:
            native.append(hook._native)
        elif isinstance(hook, SessionRunHook) or hasattr(hook, "before_run"):
            native.append(_loom.PyHook(_HookAdapter(hook, graph_for)))
        else:
            raise TypeError("hooks must be tf.train.SessionRunHook objects, got %r" % (hook,))
    return native


class CheckpointSaverListener:
    """tf.train.CheckpointSaverListener (tf.estimator.CheckpointSaverListener): subclass it
    and override any of begin(), before_save(session, global_step_value),
    after_save(session, global_step_value) and end(session, global_step_value). They run
    around every checkpoint the CheckpointSaverHook (or an Estimator's train) writes; an
    after_save returning True requests a stop, as in TF."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class _ListenerAdapter:
    """What loom._loom.PyListener calls: the C++ session and its graph in, the Python
    listener called with a tf.Session over them (and the graph as the default)."""

    def __init__(self, listener, graph_for):
        self._listener = listener
        self._graph_for = graph_for

    def _call(self, method, native_session, native_graph, global_step):
        graph = self._graph_for(native_graph)
        with graph.as_default():
            return method(_wrap_session(native_session, graph), int(global_step))

    def begin(self):
        self._listener.begin()

    def before_save(self, native_session, native_graph, global_step):
        self._call(self._listener.before_save, native_session, native_graph, global_step)

    def after_save(self, native_session, native_graph, global_step):
        return bool(self._call(self._listener.after_save, native_session, native_graph,
                               global_step))

    def end(self, native_session, native_graph, global_step):
        self._call(self._listener.end, native_session, native_graph, global_step)


def _native_listeners(listeners, graph_for=_graph_for):
    """CheckpointSaverListeners as the C++ objects the bindings take."""
    native = []
    for listener in listeners or ():
        if isinstance(listener, _loom.CheckpointSaverListener):
            native.append(listener)
        elif isinstance(listener, CheckpointSaverListener) or hasattr(listener, "after_save"):
            native.append(_loom.PyListener(_ListenerAdapter(listener, graph_for)))
        else:
            raise TypeError("saving listeners must be tf.train.CheckpointSaverListener objects, "
                            "got %r" % (listener,))
    return native


# ---- the built-in hooks ------------------------------------------------------------------

def _tensor_ref(value):
    """A hook's tensor argument for C++: a name (looked up in begin) or an Output."""
    if isinstance(value, str):
        return value
    if isinstance(value, _fw.Tensor):
        return value._out
    if hasattr(value, "_as_tensor"):
        return value._as_tensor()._out
    raise TypeError("expected a tensor or a tensor name, got %r" % (value,))


def _dir_of(output_dir, summary_writer):
    if output_dir:
        return output_dir
    if summary_writer is not None:
        return summary_writer.get_logdir()
    return ""


class StopAtStepHook(SessionRunHook):
    """tf.train.StopAtStepHook(num_steps=None, last_step=None)."""

    def __init__(self, num_steps=None, last_step=None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("One of num_steps or last_step must be specified.")
        self._native = _loom.StopAtStepHook(num_steps=num_steps, last_step=last_step)


class StepCounterHook(SessionRunHook):
    """tf.train.StepCounterHook(every_n_steps=100, every_n_secs=None, output_dir=None,
    summary_writer=None): writes global_step/sec. A summary_writer's logdir is written
    through Loom's shared writer for that directory."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._native = _loom.StepCounterHook(every_n_steps=every_n_steps,
                                             every_n_secs=every_n_secs,
                                             output_dir=_dir_of(output_dir, summary_writer))


class LoggingTensorHook(SessionRunHook):
    """tf.train.LoggingTensorHook(tensors, every_n_iter=None, every_n_secs=None,
    at_end=False, formatter=None). `tensors` is a dict {tag: tensor or name} or a list of
    tensors or names; names ("softmax_tensor", "loss:0") are looked up when training
    starts, in the graph being trained, as TF does. formatter gets {tag: numpy value}."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        if not at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if isinstance(tensors, dict):
            entries = [(str(tag), _tensor_ref(t)) for tag, t in tensors.items()]
        else:
            entries = []
            for t in tensors:
                ref = _tensor_ref(t)
                entries.append((ref if isinstance(ref, str) else ref.name, ref))
        self._native = _loom.LoggingTensorHook(entries, every_n_iter=every_n_iter,
                                               every_n_secs=every_n_secs, at_end=at_end,
                                               formatter=formatter)


class CheckpointSaverHook(SessionRunHook):
    """tf.train.CheckpointSaverHook(checkpoint_dir, save_secs=None, save_steps=None,
    saver=None, checkpoint_basename='model.ckpt', scaffold=None, listeners=None). The
    checkpoint holds every saveable variable (saver and scaffold's saver are not used);
    listeners are tf.train.CheckpointSaverListener objects, called around each save."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        if (save_secs is None) == (save_steps is None):
            raise ValueError("exactly one of save_secs and save_steps should be provided.")
        self._native = _loom.CheckpointSaverHook(checkpoint_dir, save_secs=save_secs,
                                                 save_steps=save_steps,
                                                 checkpoint_basename=checkpoint_basename,
                                                 listeners=_native_listeners(listeners))


class SummarySaverHook(SessionRunHook):
    """tf.train.SummarySaverHook(save_steps=None, save_secs=None, output_dir=None,
    summary_writer=None, scaffold=None, summary_op=None). Without summary_op it writes
    the graph's merged summaries."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (save_steps is None) == (save_secs is None):
            raise ValueError("exactly one of save_steps and save_secs should be provided.")
        if summary_op is None and scaffold is not None:
            summary_op = getattr(scaffold, "summary_op", None)
        if isinstance(summary_op, (list, tuple)):
            from loom.compat.v1 import summary as _summary
            summary_op = _summary.merge(list(summary_op))
        self._native = _loom.SummarySaverHook(
            save_steps=save_steps, save_secs=save_secs,
            output_dir=_dir_of(output_dir, summary_writer),
            summary_op=None if summary_op is None else _tensor_ref(summary_op))


class NanTensorHook(SessionRunHook):
    """tf.train.NanTensorHook(loss_tensor, fail_on_nan_loss=True): raises
    NanLossDuringTrainingError-like InvalidArgumentError ("Model diverged with loss =
    NaN") or stops."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._native = _loom.NanTensorHook(_tensor_ref(loss_tensor), fail_on_nan_loss)


class FinalOpsHook(SessionRunHook):
    """tf.train.FinalOpsHook(final_ops, final_ops_feed_dict=None): evaluates final_ops
    (a tensor, a list or a dict of tensors) in end()."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._structure = final_ops
        if isinstance(final_ops, dict):
            self._keys = list(final_ops.keys())
            tensors = [final_ops[k] for k in self._keys]
        elif isinstance(final_ops, (list, tuple)):
            self._keys = None
            tensors = list(final_ops)
        else:
            self._keys = None
            tensors = [final_ops]
        feeds = [(_fw.convert_to_tensor(k)._feed_out, v) for k, v in (final_ops_feed_dict or {}).items()]
        self._native = _loom.FinalOpsHook([_tensor_ref(t) for t in tensors], feeds)

    @property
    def final_ops_values(self):
        values = self._native.final_ops_values
        if not values:
            return None
        if self._keys is not None:
            return dict(zip(self._keys, values))
        if isinstance(self._structure, (list, tuple)):
            return type(self._structure)(values)
        return values[0]


class FeedFnHook(SessionRunHook):
    """tf.train.FeedFnHook(feed_fn): feed_fn() returns a feed_dict for every step."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """tf.train.GlobalStepWaiterHook(wait_until_step)."""

    def __init__(self, wait_until_step):
        self._native = _loom.GlobalStepWaiterHook(wait_until_step)


class ProfilerHook(SessionRunHook):
    """tf.train.ProfilerHook(save_steps=None, save_secs=None, output_dir='', ...): writes
    Chrome trace JSON files timeline-<step>.json."""

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True,
                 show_memory=False):
        if (save_steps is None) == (save_secs is None):
            raise ValueError("exactly one of save_steps and save_secs should be provided.")
        self._native = _loom.ProfilerHook(save_steps=save_steps, save_secs=save_secs,
                                          output_dir=output_dir)


# ---- MonitoredTrainingSession ------------------------------------------------------------

class _UseDefault:
    def __repr__(self):
        return "USE_DEFAULT"


USE_DEFAULT = _UseDefault()


def _schedule(secs, steps, default_secs):
    """TF's defaulting of a (secs, steps) pair: both default -> default_secs; one set ->
    the other unset; an explicit None -> disabled (0)."""
    if secs is USE_DEFAULT and steps is USE_DEFAULT:
        return default_secs, None
    secs = None if secs is USE_DEFAULT else secs
    steps = None if steps is USE_DEFAULT else steps
    if secs is None and steps is None:
        return 0, None  # both disabled explicitly
    return secs, steps


class _MonitoredSession:
    """What MonitoredTrainingSession returns: run / should_stop / close, a context
    manager. run returns None (and should_stop() becomes true) when the input ends
    (OutOfRangeError inside the step), as TF's `with` block ends the loop."""

    def __init__(self, graph, native):
        self._graph = graph
        self._native = native
        self._default = None

    @property
    def graph(self):
        return self._graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        mapper = _sess._FetchMapper(self._graph, fetches)
        feeds = _sess.BaseSession._feeds(_wrap_session(None, self._graph), feed_dict)
        values = self._native.run(feeds, mapper.tensors, mapper.targets)
        if self._native.end_of_input:
            return None
        return mapper.build(values)

    def run_step_fn(self, step_fn):
        raise NotImplementedError("MonitoredSession.run_step_fn is not supported from Python")

    def should_stop(self):
        return self._native.should_stop()

    def close(self):
        try:
            self._native.close()
        finally:
            _release_graphs([self._graph])

    def __enter__(self):
        self._default = self._graph.as_default()
        self._default.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.close()
            else:
                _release_graphs([self._graph])
        finally:
            self._default.__exit__(exc_type, exc, tb)
        from loom.compat.v1 import errors as _errors
        # TF: OutOfRangeError and StopIteration inside the block end it cleanly.
        return exc_type is not None and issubclass(exc_type,
                                                   (_errors.OutOfRangeError, StopIteration))


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,
                             hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """tf.train.MonitoredTrainingSession over the default graph, with TF's defaults: a
    checkpoint every 600 s and summaries every 100 steps into checkpoint_dir (when given),
    global_step/sec every log_step_count_steps. The session restores the newest
    checkpoint in checkpoint_dir or runs the initializers."""
    graph = _fw.get_default_graph()
    _register_graph(graph)
    ckpt_secs, ckpt_steps = _schedule(save_checkpoint_secs, save_checkpoint_steps, 600)
    sum_secs, sum_steps = _schedule(save_summaries_secs, save_summaries_steps, None)
    if save_summaries_secs is USE_DEFAULT and save_summaries_steps is USE_DEFAULT:
        sum_secs, sum_steps = None, 100
    if not checkpoint_dir and not summary_dir:
        sum_steps, sum_secs = 0, None
    summary_op = init_op = init_fn = None
    if scaffold is not None:
        summary_op = getattr(scaffold, "summary_op", None)
        init_op = getattr(scaffold, "init_op", None)
        user_init_fn = getattr(scaffold, "init_fn", None)
        if user_init_fn is not None:
            def init_fn(native_session):
                user_init_fn(scaffold, _wrap_session(native_session, graph))
    # A second session over this graph (finalized by the first) reuses the first one's
    # init ops, summary op and Saver, as TF's Scaffold finds them in the collections.
    native, graph._loom_scaffold = _loom.monitored_training_session(
        graph._g, is_chief=is_chief, checkpoint_dir=checkpoint_dir or "",
        hooks=_native_hooks(hooks), chief_only_hooks=_native_hooks(chief_only_hooks),
        save_checkpoint_secs=ckpt_secs, save_checkpoint_steps=ckpt_steps,
        save_summaries_steps=sum_steps, save_summaries_secs=sum_secs,
        log_step_count_steps=log_step_count_steps if log_step_count_steps else 0,
        summary_dir=summary_dir or "",
        summary_op=None if summary_op is None else _tensor_ref(summary_op),
        init_op=None if init_op is None else _fw._as_operation(graph, init_op)._node,
        init_fn=init_fn, previous_scaffold=getattr(graph, "_loom_scaffold", None))
    return _MonitoredSession(graph, native)


class SingularMonitoredSession(_MonitoredSession):
    """tf.train.SingularMonitoredSession(hooks=None, scaffold=None, checkpoint_dir=None):
    a MonitoredTrainingSession without the default saving hooks."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        s = MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, scaffold=scaffold,
                                     hooks=hooks, save_checkpoint_secs=None,
                                     save_summaries_steps=None, log_step_count_steps=0)
        super().__init__(s._graph, s._native)

    def raw_session(self):
        return _wrap_session(self._native.raw_session, self._graph)
