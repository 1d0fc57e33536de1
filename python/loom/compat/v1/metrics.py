"""tf.metrics over Loom's C++ streaming metrics (loom/estimator/metrics.h). Each returns
TF's pair (value, update_op), both tensors: update_op is the metric's value after folding
in the batch, so it can be summarized (tf.summary.scalar('accuracy', acc[1])) and run.
The counters are local variables (zeroed by tf.local_variables_initializer, which the
Estimator runs before every evaluation)."""
from loom import _loom
from loom.compat.v1 import _framework as _fw


def _pair(graph, result, metrics_collections, updates_collections):
    value_out, update_node = result
    value = graph._tensor(value_out)
    update = graph._tensor(update_node.output(0))
    for c in metrics_collections or ():
        graph.add_to_collection(c, value)
    for c in updates_collections or ():
        graph.add_to_collection(c, update)
    return value, update


def _weights(weights):
    return None if weights is None else _fw.convert_to_tensor(weights)._out


def _two(kind, labels, predictions, weights, metrics_collections, updates_collections, name):
    labels = _fw.convert_to_tensor(labels)
    predictions = _fw.convert_to_tensor(predictions)
    graph = predictions.graph
    return _pair(graph, _loom.metric(graph._g, graph.get_name_scope(), kind, labels._out,
                                     predictions._out, _weights(weights), name or ""),
                 metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """Fraction of entries where labels == predictions (predictions cast to the labels'
    dtype, as TF)."""
    return _two("accuracy", labels, predictions, weights, metrics_collections,
                updates_collections, name)


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    return _two("mean_squared_error", labels, predictions, weights, metrics_collections,
                updates_collections, name)


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    return _two("root_mean_squared_error", labels, predictions, weights, metrics_collections,
                updates_collections, name)


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    return _two("mean_absolute_error", labels, predictions, weights, metrics_collections,
                updates_collections, name)


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    return _two("precision", labels, predictions, weights, metrics_collections,
                updates_collections, name)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    return _two("recall", labels, predictions, weights, metrics_collections,
                updates_collections, name)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    values = _fw.convert_to_tensor(values)
    graph = values.graph
    return _pair(graph, _loom.metric_mean(graph._g, graph.get_name_scope(), values._out,
                                          _weights(weights), name or ""),
                 metrics_collections, updates_collections)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    if summation_method != "trapezoidal" or thresholds is not None:
        raise NotImplementedError("tf.metrics.auc: only summation_method='trapezoidal' with "
                                  "num_thresholds is supported")
    if curve not in ("ROC", "PR"):
        raise ValueError("curve must be either ROC or PR, %s unknown" % curve)
    labels = _fw.convert_to_tensor(labels)
    predictions = _fw.convert_to_tensor(predictions)
    graph = predictions.graph
    return _pair(graph, _loom.metric_auc(graph._g, graph.get_name_scope(), labels._out,
                                         predictions._out, _weights(weights),
                                         int(num_thresholds), curve, name or ""),
                 metrics_collections, updates_collections)


def _classes(kind, labels, predictions, num_classes, weights, metrics_collections,
             updates_collections, name):
    labels = _fw.convert_to_tensor(labels)
    predictions = _fw.convert_to_tensor(predictions)
    graph = predictions.graph
    return _pair(graph, _loom.metric_classes(graph._g, graph.get_name_scope(), kind,
                                             labels._out, predictions._out, int(num_classes),
                                             _weights(weights), name or ""),
                 metrics_collections, updates_collections)


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    return _classes("mean_per_class_accuracy", labels, predictions, num_classes, weights,
                    metrics_collections, updates_collections, name)


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    return _classes("mean_iou", labels, predictions, num_classes, weights,
                    metrics_collections, updates_collections, name)


from loom.compat.v1 import _unsupported  # noqa: E402

__getattr__ = _unsupported.missing("tf.metrics", {
    n: "only accuracy, mean, mean_squared_error, root_mean_squared_error, "
       "mean_absolute_error, precision, recall, auc, mean_per_class_accuracy and mean_iou "
       "are" for n in (
           "precision_at_k", "recall_at_k", "precision_at_thresholds",
           "recall_at_thresholds", "precision_at_top_k", "average_precision_at_k",
           "sparse_precision_at_k", "sparse_average_precision_at_k", "false_negatives",
           "false_positives", "true_negatives", "true_positives",
           "false_negatives_at_thresholds", "false_positives_at_thresholds",
           "true_negatives_at_thresholds", "true_positives_at_thresholds",
           "sensitivity_at_specificity", "specificity_at_sensitivity", "mean_cosine_distance",
           "mean_relative_error", "mean_tensor", "percentage_below")})
