"""tf.losses over Loom's C++ losses (loom/estimator/losses.h): TF1's signatures, weights
(a scalar or a tensor broadcastable to the per-element loss) and reductions, with the
default SUM_BY_NONZERO_WEIGHTS. Each loss is added to tf.GraphKeys.LOSSES (or
loss_collection), as TF does, so get_total_loss() sees it."""
from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes


class Reduction:
    """tf.losses.Reduction."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError("Invalid Reduction Key %s." % key)


def _weights(weights, like):
    """None for TF's default weight 1.0 (the C++ default), else a tensor."""
    if weights is None or (isinstance(weights, (int, float)) and weights == 1.0):
        return None
    if isinstance(weights, _fw.Tensor):
        return weights._out
    return _fw.convert_to_tensor(weights, dtype=like.dtype if like.dtype in
                                 (_dtypes.float32, _dtypes.float64) else _dtypes.float32)._out


def _loss(kind, labels, values, weights, scope, loss_collection, reduction,
          label_smoothing=0.0, delta=1.0, epsilon=1e-7, axis=-1):
    Reduction.validate(reduction)
    labels = _fw.convert_to_tensor(labels)
    values = _fw.convert_to_tensor(values)
    graph = values.graph
    with graph.as_default(), graph.name_scope(scope):
        out = _loom.loss(graph._g, graph.get_name_scope(), kind, labels._out, values._out,
                         _weights(weights, values), reduction, float(label_smoothing),
                         float(delta), float(epsilon), int(axis))
    loss = graph._tensor(out)
    if loss_collection is not None:
        graph.add_to_collection(loss_collection, loss)
    return loss


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=_fw.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("softmax_cross_entropy", onehot_labels, logits, weights, scope,
                 loss_collection, reduction, label_smoothing)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=_fw.GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("sparse_softmax_cross_entropy", labels, logits, weights, scope,
                 loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=_fw.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("sigmoid_cross_entropy", multi_class_labels, logits, weights, scope,
                 loss_collection, reduction, label_smoothing)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=_fw.GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("mean_squared_error", labels, predictions, weights, scope, loss_collection,
                 reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=_fw.GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("absolute_difference", labels, predictions, weights, scope, loss_collection,
                 reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=_fw.GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("huber_loss", labels, predictions, weights, scope, loss_collection, reduction,
                 delta=delta)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=_fw.GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("hinge_loss", labels, logits, weights, scope, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=_fw.GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    return _loss("log_loss", labels, predictions, weights, scope, loss_collection, reduction,
                 epsilon=epsilon)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=_fw.GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None):
    """TF 1.15's cosine_distance: labels and predictions must already be unit-normalized
    along `axis` (`dim` is its deprecated name); the loss is 1 - their dot product there."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    return _loss("cosine_distance", labels, predictions, weights, scope, loss_collection,
                 reduction, axis=axis)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=_fw.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    Reduction.validate(reduction)
    losses = _fw.convert_to_tensor(losses)
    graph = losses.graph
    with graph.as_default(), graph.name_scope(scope):
        out = _loom.compute_weighted_loss(graph._g, graph.get_name_scope(), losses._out,
                                          _weights(weights, losses), reduction)
    loss = graph._tensor(out)
    if loss_collection is not None:
        graph.add_to_collection(loss_collection, loss)
    return loss


def add_loss(loss, loss_collection=_fw.GraphKeys.LOSSES):
    if loss_collection is not None:
        _fw.get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=_fw.GraphKeys.LOSSES):
    return _fw.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return _fw.get_collection(_fw.GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    from loom.compat.v1 import _ops
    losses = get_regularization_losses(scope)
    if not losses:
        return _fw.constant(0.0)
    return _ops.NAMESPACES[""]["add_n"](losses, name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    from loom.compat.v1 import _ops
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses found in the graph (tf.GraphKeys.LOSSES is empty)")
    return _ops.NAMESPACES[""]["add_n"](losses, name=name)


from loom.compat.v1 import _unsupported  # noqa: E402

__getattr__ = _unsupported.missing("tf.losses", {
    "mean_pairwise_squared_error": "no C++ loss for it (loom/estimator/losses.h)"})
