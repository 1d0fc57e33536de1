"""tf.Session over loom._loom.Session: nested fetches (lists, tuples, namedtuples, dicts),
feed_dict with numpy arrays (borrowed without a copy when dtype and layout allow,
converted as TF does otherwise: a float64 array fed to a float32 placeholder), results as
numpy arrays, and the default-session stack that Tensor.eval / Operation.run use. The GIL
is released for the whole C++ run."""
import contextlib

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import sparse as _sparse


class ConfigProto:
    """tf.ConfigProto. Loom reads intra_op_parallelism_threads (its Session's thread count);
    the other fields (device placement, GPU options, inter-op threads) are accepted and
    have no effect: Loom runs on the CPU with one pool."""

    def __init__(self, intra_op_parallelism_threads=0, inter_op_parallelism_threads=0,
                 **unused):
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        for k, v in unused.items():
            setattr(self, k, v)


class GPUOptions:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class RunOptions:
    """Accepted for TF's signatures; Loom's tracing is not exposed to Python yet."""
    FULL_TRACE = 3
    NO_TRACE = 0

    def __init__(self, trace_level=0, **kwargs):
        self.trace_level = trace_level


class RunMetadata:
    def __init__(self):
        self.step_stats = None


class _FetchMapper:
    """Flattens a fetch structure into (tensors, operations) and rebuilds the results."""
    __slots__ = ("tensors", "targets", "build")

    def __init__(self, graph, fetches):
        self.tensors = []
        self.targets = []
        self.build = self._compile(graph, fetches)

    def _compile(self, graph, fetch):
        if isinstance(fetch, _fw.Tensor):
            if fetch.graph is not graph:
                raise ValueError("Tensor %s is not an element of this graph." % fetch.name)
            i = len(self.tensors)
            self.tensors.append(fetch._out)
            return lambda values: values[i]
        if isinstance(fetch, _fw.Operation):
            if fetch.graph is not graph:
                raise ValueError("Operation %s is not an element of this graph." % fetch.name)
            self.targets.append(fetch._node)
            return lambda values: None
        if isinstance(fetch, _sparse.SparseTensor):
            parts = [self._compile(graph, t) for t in
                     (fetch.indices, fetch.values, fetch.dense_shape)]
            return lambda values: _sparse.SparseTensorValue(*(b(values) for b in parts))
        if isinstance(fetch, str):
            return self._compile(graph, graph.as_graph_element(fetch))
        if fetch is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        if isinstance(fetch, dict):
            keys = list(fetch.keys())
            builders = [self._compile(graph, fetch[k]) for k in keys]
            cls = type(fetch)
            return lambda values: cls(zip(keys, (b(values) for b in builders)))
        if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):  # namedtuple
            builders = [self._compile(graph, f) for f in fetch]
            cls = type(fetch)
            return lambda values: cls(*(b(values) for b in builders))
        if isinstance(fetch, (list, tuple)):
            builders = [self._compile(graph, f) for f in fetch]
            cls = type(fetch)
            return lambda values: cls(b(values) for b in builders)
        if hasattr(fetch, "_as_graph_element"):
            return self._compile(graph, fetch._as_graph_element())
        raise TypeError("Fetch argument %r has invalid type %r, must be a string or Tensor. "
                        "(Can not convert a %s into a Tensor or Operation.)"
                        % (fetch, type(fetch), type(fetch).__name__))


class BaseSession:
    def __init__(self, target="", graph=None, config=None):
        self._graph = graph if graph is not None else _fw.get_default_graph()
        threads = getattr(config, "intra_op_parallelism_threads", 0) if config else 0
        self._session = _loom.Session(self._graph._g, int(threads or 0))
        self._closed = False
        self._default_cm = None
        self._init_callables()

    @classmethod
    def _wrap(cls, native, graph):
        """A Session over a C++ Session owned elsewhere (a MonitoredSession's, the one a
        hook gets); native may be None for a wrapper that only converts feeds."""
        session = cls.__new__(cls)
        session._graph = graph
        session._session = native
        session._closed = False
        session._default_cm = None
        session._init_callables()
        return session

    def _init_callables(self):
        # run()'s native callables, by (fetch, feed keys): a training loop's
        # sess.run(train_op, {x: ..., y: ...}) converts its feed_dict once, not per step.
        self._callables = {}
        self._last = (None, None, None)  # the signature run() saw last, and its callable

    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        raise NotImplementedError("Session.graph_def: use tf.train.export_meta_graph")

    @property
    def sess_str(self):
        return ""

    def _feeds(self, feed_dict):
        feeds = []
        if not feed_dict:
            return feeds
        graph = self._graph
        for key, value in feed_dict.items():
            if isinstance(key, str):
                key = graph.as_graph_element(key, allow_operation=False)
            elif not isinstance(key, (_fw.Tensor, _sparse.SparseTensor)):
                if hasattr(key, "_as_tensor"):
                    key = key._as_tensor()
                else:
                    raise TypeError("The key of a feed_dict must be a Tensor or a tensor name, "
                                    "got %r" % (key,))
            if isinstance(key, _sparse.SparseTensor):
                # A sparse_placeholder: its three tensors, fed from a SparseTensorValue or
                # an (indices, values, dense_shape) tuple.
                if not isinstance(value, (tuple, list)) or len(value) != 3:
                    raise TypeError("The value fed to the SparseTensor %s must be a "
                                    "SparseTensorValue or (indices, values, dense_shape), "
                                    "got %r" % (key.values.name, value))
                for part, v in zip((key.indices, key.values, key.dense_shape), value):
                    feeds.extend(self._feeds({part: v}))
                continue
            if key.graph is not graph:
                raise ValueError("Cannot feed %s: it belongs to another graph" % key.name)
            if isinstance(value, _fw.Tensor):
                raise TypeError("The value of a feed cannot be a tf.Tensor object (%s). "
                                "Acceptable feed values include Python scalars, strings, "
                                "lists, numpy ndarrays." % value.name)
            feeds.append((key._feed_out, value))
        return feeds

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs what `fetches` needs and returns their values in the same structure."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        kind = type(fetches)
        if (kind is _fw.Tensor or kind is _fw.Operation) and fetches._graph is self._graph:
            # Fast path, one Tensor or one Operation: a cached native callable per feed
            # signature (the keys, in the dict's order).
            keys = tuple(feed_dict) if feed_dict else ()
            last = self._last
            if last[0] is fetches and last[1] == keys:  # a loop's signature: no hashing
                call = last[2]
            else:
                call = self._callables.get((fetches, keys))
                if call is None:
                    call = self._callable_for(fetches, keys, feed_dict)
                self._last = (fetches, keys, call)
            values = call(*feed_dict.values()) if keys else call()
            return None if values is None else values[0]
        mapper = _FetchMapper(self._graph, fetches)
        values = self._session.run(self._feeds(feed_dict), mapper.tensors, mapper.targets)
        return mapper.build(values)

    def _callable_for(self, fetch, keys, feed_dict):
        """run()'s native callable for one fetch and these feed keys (checked here, once)."""
        feeds = [out for out, _ in self._feeds(feed_dict)] if keys else []
        if isinstance(fetch, _fw.Tensor):
            call = self._session.make_callable(feeds, [fetch._out], [])
        else:
            call = self._session.make_callable(feeds, [], [fetch._node])
        sparse = [isinstance(k, _sparse.SparseTensor) for k in keys]
        if any(sparse):
            # A sparse_placeholder's value feeds its three tensors.
            native_call = call

            def call(*values):
                flat = []
                for is_sparse, v in zip(sparse, values):
                    if is_sparse:
                        if not isinstance(v, (tuple, list)) or len(v) != 3:
                            raise TypeError("The value fed to a SparseTensor must be a "
                                            "SparseTensorValue or (indices, values, "
                                            "dense_shape), got %r" % (v,))
                        flat.extend(v)
                    else:
                        flat.append(v)
                return native_call(*flat)
        if len(self._callables) >= 64:  # a program that builds new fetches per run
            self._callables.clear()
        self._callables[(fetch, keys)] = call
        return call

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """Session.make_callable: the fetch structure and the fed tensors are resolved once;
        each call converts only its arguments (in feed_list's order) and runs."""
        mapper = _FetchMapper(self._graph, fetches)
        feed_outs = []
        for f in feed_list or []:
            t = self._graph.as_graph_element(f, allow_operation=False) if isinstance(f, str) \
                else _fw.convert_to_tensor(f)
            if t.graph is not self._graph:
                raise ValueError("Cannot feed %s: it belongs to another graph" % t.name)
            feed_outs.append(t._feed_out)
        call = self._session.make_callable(feed_outs, mapper.tensors, mapper.targets)
        kind = type(fetches)
        if kind is _fw.Operation:
            return call  # returns None
        if kind is _fw.Tensor:
            return lambda *args: call(*args)[0]
        build = mapper.build

        def run(*args):
            values = call(*args)
            return build(values if values is not None else [])
        return run

    def close(self):
        self._closed = True

    def as_default(self):
        return _default_session(self)

    def __enter__(self):
        self._default_cm = [self._graph.as_default(), _default_session(self)]
        for cm in self._default_cm:
            cm.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        for cm in reversed(self._default_cm):
            cm.__exit__(exc_type, exc, tb)
        self._default_cm = None
        self.close()
        return False

    # For loom's own C++ bindings (hooks, MonitoredSession).
    @property
    def _native(self):
        return self._session


class Session(BaseSession):
    """tf.Session(target='', graph=None, config=None)."""


class InteractiveSession(BaseSession):
    """tf.InteractiveSession: installs itself as the default session until closed."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._cm = _default_session(self)
        self._cm.__enter__()

    def close(self):
        if self._cm is not None:
            self._cm.__exit__(None, None, None)
            self._cm = None
        super().close()


@contextlib.contextmanager
def _default_session(session):
    _fw._stack.sessions.append(session)
    try:
        yield session
    finally:
        _fw._stack.sessions.pop()


def get_default_session():
    return _fw._stack.sessions[-1] if _fw._stack.sessions else None


def _session_for(graph, session):
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                         "registered. Use `with sess.as_default()` or pass an explicit "
                         "session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's "
                         "graph is different from the session's graph.")
    return session
