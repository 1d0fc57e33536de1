"""tf.summary: summary ops (serialized Summary protos, as TF's) collected in
GraphKeys.SUMMARIES, merge / merge_all, and FileWriter (a TensorBoard event file; the
graph is written as structure only, so its size never depends on the data)."""
from loom import _loom
from loom.compat.v1 import _framework as _fw


def _summary(fn, name, tensor, collections, *extra):
    graph = _fw.get_default_graph()
    tensor = _fw.convert_to_tensor(tensor)
    # TF: the node and the tag are both `name`; the C++ builder prefixes the tag with
    # the name scope.
    out = graph._tensor(fn(graph._g, graph.get_name_scope(), name, name, tensor._out, *extra))
    for c in (collections if collections is not None else [_fw.GraphKeys.SUMMARIES]):
        graph.add_to_collection(c, out)
    return out


def scalar(name, tensor, collections=None, family=None):
    return _summary(_loom.scalar_summary, name, tensor, collections)


def histogram(name, values, collections=None, family=None):
    return _summary(_loom.histogram_summary, name, values, collections)


def image(name, tensor, max_outputs=3, collections=None, family=None):
    return _summary(_loom.image_summary, name, tensor, collections, int(max_outputs))


def text(name, tensor, collections=None):
    return _summary(_loom.text_summary, name, tensor, collections)


def merge(inputs, collections=None, name=None):
    graph = _fw.get_default_graph()
    outs = [_fw.convert_to_tensor(i)._out for i in inputs]
    merged = graph._tensor(_loom.merge_summary(graph._g, graph.get_name_scope(),
                                               name or "Merge/MergeSummary", outs))
    for c in collections or ():
        graph.add_to_collection(c, merged)
    return merged


def merge_all(key=_fw.GraphKeys.SUMMARIES, scope=None, name=None):
    """Merges the summaries of the collection `key`; None when there are none."""
    summaries = _fw.get_collection(key, scope)
    if not summaries:
        return None
    return merge(summaries, name=name)


class FileWriter:
    """tf.summary.FileWriter(logdir, graph=None, max_queue=10, flush_secs=120,
    filename_suffix=None)."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        self._native = _loom.FileWriter(str(logdir), int(max_queue), float(flush_secs),
                                        filename_suffix or "")
        if graph is not None:
            self.add_graph(graph)

    def add_summary(self, summary, global_step=None):
        if isinstance(summary, str):
            summary = summary.encode("latin-1")
        if hasattr(summary, "item") and not isinstance(summary, bytes):
            summary = summary.item()  # a fetched numpy scalar of bytes
        self._native.add_summary(bytes(summary), 0 if global_step is None else int(global_step))

    def add_graph(self, graph, global_step=None, graph_def=None):
        self._native.add_graph(graph._g, 0 if global_step is None else int(global_step))

    def get_logdir(self):
        return self._native.logdir

    def flush(self):
        self._native.flush()

    def close(self):
        self._native.close()

    def reopen(self):
        raise NotImplementedError("FileWriter.reopen: make a new FileWriter")

    @property
    def path(self):
        return self._native.path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    _cache = {}

    @staticmethod
    def get(logdir):
        w = FileWriterCache._cache.get(logdir)
        if w is None or w._native.closed:
            w = FileWriter(logdir)
            FileWriterCache._cache[logdir] = w
        return w

    @staticmethod
    def clear():
        for w in FileWriterCache._cache.values():
            w.close()
        FileWriterCache._cache.clear()
