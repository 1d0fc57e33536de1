"""tf.clip_by_norm as TF 1.15 builds it (clip_ops.py): t * clip_norm / max(l2norm, clip_norm),
l2norm over `axes` (all dims when None) kept as size-1 dims so it broadcasts, and made safe
at zero (where the sum of squares is 0 the norm is that 0 and its gradient flows through a
constant 1 instead of sqrt's infinite slope). Gradients follow by composition.
tf.clip_by_global_norm is _ops.clip_by_global_norm."""
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import _ops


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """tf.clip_by_norm(t, clip_norm, axes=None): t unchanged where its L2 norm is at most
    clip_norm, else scaled down to norm clip_norm. An IndexedSlices (a sparse gradient from
    compute_gradients) is clipped by the norm of its values and stays IndexedSlices, as
    TF's."""
    from loom.compat.v1.train import IndexedSlices  # train imports this package's parts

    if isinstance(t, IndexedSlices):
        values = clip_by_norm(t.values, clip_norm, axes, name)
        return IndexedSlices(values, t.indices, t.dense_shape)
    ns = _ops.NAMESPACES[""]
    with _fw.get_default_graph().name_scope(name or "clip_by_norm"):
        t = _fw.convert_to_tensor(t, name="t")
        if not t.dtype.is_floating:
            raise TypeError("tf.clip_by_norm: t must be float32 or float64, got %s (%s)"
                            % (t.dtype.name, t.name))
        clip = (clip_norm if isinstance(clip_norm, _fw.Tensor)
                else _fw.constant(clip_norm, dtype=t.dtype, name="clip_norm"))
        if clip.dtype != t.dtype:
            clip = ns["cast"](clip, t.dtype)
        if axes is not None and _ops.constant_value(axes) is None:
            raise TypeError("tf.clip_by_norm: axes must be a Python list or a constant, got "
                            "the computed tensor %s" % axes.name)
        l2sum = ns["reduce_sum"](t * t, axes, keepdims=True)
        positive = ns["greater"](l2sum, 0.0)
        l2sum_safe = ns["where_v2"](positive, l2sum, _ops.ones_like(l2sum))
        l2norm = ns["where_v2"](positive, ns["sqrt"](l2sum_safe), l2sum)
        intermediate = t * clip
        if not t.shape.is_compatible_with(intermediate.shape):
            raise ValueError("tf.clip_by_norm: clip_norm %s would broadcast t %s to %s"
                             % (clip.shape, t.shape, intermediate.shape))
        return ns["identity"](intermediate / ns["maximum"](l2norm, clip), name="clipped")
