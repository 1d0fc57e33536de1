"""tf.estimator over Loom's C++ Estimator (loom/estimator/estimator.h): the C++ side owns
the loop (graphs, sessions, checkpoints, summaries, hooks, exports) and calls back into
Python for model_fn, input_fn and Python hooks, with the GIL held only for those calls.

model_fn gets only the arguments it declares (features, labels, mode, params, config), as
in TF. input_fn may return (features, labels) tensors, features alone, or a tf.data
Dataset of (features, labels) or features; numpy_input_fn hands C++ a view of the arrays
(no copy). An exception raised in model_fn, input_fn or a hook arrives in the caller as
itself; model_dir then holds no partial checkpoint (checkpoints are written whole, then
renamed into place, by the C++ Saver).

Differences from TF are listed in docs/python.md."""
import collections
import inspect
import os
import tempfile
import weakref

import numpy as np

from loom import _loom
from loom.compat.v1 import _framework as _fw
from loom.compat.v1 import dtypes as _dtypes
from loom.compat.v1 import logging as _logging
from loom.compat.v1 import sparse as _sparse
from loom.compat.v1 import train_hooks as _hooks


class ModeKeys:
    """tf.estimator.ModeKeys."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


# ---- export outputs and serving input ----------------------------------------------------

class ExportOutput:
    """Base of tf.estimator.export.*Output."""

    def _outputs(self):
        raise NotImplementedError


class PredictOutput(ExportOutput):
    def __init__(self, outputs):
        if isinstance(outputs, _fw.Tensor):
            outputs = {"output": outputs}
        self.outputs = dict(outputs)

    def _outputs(self):
        return self.outputs


class ClassificationOutput(ExportOutput):
    def __init__(self, scores=None, classes=None):
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        self.scores, self.classes = scores, classes

    def _outputs(self):
        out = {}
        if self.scores is not None:
            out["scores"] = self.scores
        if self.classes is not None:
            out["classes"] = self.classes
        return out


class RegressionOutput(ExportOutput):
    def __init__(self, value):
        self.value = value

    def _outputs(self):
        return {"outputs": self.value}


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """tf.estimator.export.ServingInputReceiver(features, receiver_tensors)."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if isinstance(features, _fw.Tensor):
            features = {"feature": features}
        if isinstance(receiver_tensors, _fw.Tensor):
            receiver_tensors = {"input": receiver_tensors}
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """tf.estimator.export.TensorServingInputReceiver(features, receiver_tensors): like
    ServingInputReceiver, but model_fn gets `features` as the one tensor it is (not a
    dict), as an input_fn returning one tensor gives it."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        if not isinstance(features, _fw.Tensor):
            raise ValueError("feature must be a Tensor, SparseTensor, or RaggedTensor.")
        if isinstance(receiver_tensors, _fw.Tensor):
            receiver_tensors = {"input": receiver_tensors}
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """tf.estimator.export.build_raw_serving_input_receiver_fn: one placeholder per
    feature, of the feature's dtype and shape with the batch dimension free."""

    def serving_input_receiver_fn():
        receivers = {}
        for name, t in features.items():
            shape = t.shape.dims
            if shape is not None and shape:
                shape = [default_batch_size] + shape[1:]
            if isinstance(t, _sparse.SparseTensor):  # fed a SparseTensorValue
                receivers[name] = _sparse.placeholder(t.dtype, shape, name=name)
                continue
            receivers[name] = _fw.placeholder(t.dtype, shape, name=name)
        return ServingInputReceiver(dict(receivers), receivers)
    return serving_input_receiver_fn


class _Export:
    """tf.estimator.export."""
    ServingInputReceiver = ServingInputReceiver
    TensorServingInputReceiver = TensorServingInputReceiver
    PredictOutput = PredictOutput
    ClassificationOutput = ClassificationOutput
    RegressionOutput = RegressionOutput
    ExportOutput = ExportOutput
    build_raw_serving_input_receiver_fn = staticmethod(build_raw_serving_input_receiver_fn)


export = _Export


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """tf.estimator.export.build_parsing_serving_input_receiver_fn: a serving input that
    takes serialized tf.Example records (a string placeholder "input_example_tensor" of
    shape [default_batch_size], receiver tensor "examples") and parses them with
    tf.parse_example(feature_spec). Dense tf.FixedLenFeature entries only."""
    from loom.compat.v1 import parsing as _parsing

    def serving_input_receiver_fn():
        serialized = _fw.placeholder(_dtypes.string, [default_batch_size],
                                     name="input_example_tensor")
        features = _parsing.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})
    return serving_input_receiver_fn


_Export.build_parsing_serving_input_receiver_fn = staticmethod(
    build_parsing_serving_input_receiver_fn)


# ---- exporters (EvalSpec(exporters=...)) -------------------------------------------------

class Exporter:
    """tf.estimator.Exporter: subclass it, give it a `name` and an
    export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)
    returning the directory written (or None). train_and_evaluate calls it after each
    evaluation, as TF does; the built-in exporters below run in C++."""

    @property
    def name(self):
        raise NotImplementedError("Exporter subclasses must define name")

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        raise NotImplementedError("Exporter subclasses must define export")

    def _native_exporter(self, estimator):
        ref = weakref.ref(estimator)

        def export(export_path, checkpoint_path, eval_result, is_the_final_export):
            written = self.export(ref(), export_path, checkpoint_path,
                                  _eval_result(eval_result), is_the_final_export)
            return None if written is None else os.fsdecode(written)
        return _loom.PyExporter(self.name, export)


def _eval_result(metrics):
    """C++ metrics as Estimator.evaluate returns them (numpy float32, global_step int64)."""
    return {k: (np.int64(v) if k == "global_step" else np.float32(v))
            for k, v in metrics.items()}


def _check_exports_to_keep(exports_to_keep):
    if exports_to_keep is not None and exports_to_keep <= 0:
        raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got %s"
                         % exports_to_keep)
    return 0 if exports_to_keep is None else int(exports_to_keep)  # C++: 0 keeps all


def _check_assets_extra(assets_extra, what):
    if assets_extra:
        raise NotImplementedError("%s(assets_extra=...) is not supported" % what)


class LatestExporter(Exporter):
    """tf.estimator.LatestExporter: exports every evaluated checkpoint to
    model_dir/export/<name>/<timestamp>, keeping the newest exports_to_keep (None: all).
    as_text is accepted and not used (Loom's SavedModel, docs/estimator.md)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        _check_assets_extra(assets_extra, "LatestExporter")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._exports_to_keep = _check_exports_to_keep(exports_to_keep)

    @property
    def name(self):
        return self._name

    def _native_exporter(self, estimator):
        return _loom.LatestExporter(
            self._name, estimator._native_serving_fn(self._serving_input_receiver_fn),
            exports_to_keep=self._exports_to_keep)


def _loss_smaller(best_eval_result, current_eval_result):
    """TF's default BestExporter compare_fn: the current loss is smaller."""
    default_key = "loss"
    if not best_eval_result or default_key not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or default_key not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result[default_key] > current_eval_result[default_key]


class BestExporter(Exporter):
    """tf.estimator.BestExporter: exports when an evaluation beats the best one so far
    (compare_fn(best_eval_result, current_eval_result) is True), the best seeded from the
    event files in model_dir/eval (so a restarted job keeps its record). The C++
    BestExporter does the work; a compare_fn other than the default is called back."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=_loss_smaller,
                 assets_extra=None, as_text=False, exports_to_keep=5):
        if not callable(compare_fn):
            raise ValueError("`compare_fn` must be callable.")
        args, _ = _fn_args(compare_fn)
        if "best_eval_result" not in args:
            raise ValueError("compare_fn (%s) must include best_eval_result argument."
                             % compare_fn)
        if "current_eval_result" not in args:
            raise ValueError("compare_fn (%s) must include current_eval_result argument."
                             % compare_fn)
        if serving_input_receiver_fn is None:
            raise ValueError("BestExporter needs a serving_input_receiver_fn")
        if event_file_pattern not in (None, "eval/*.tfevents.*"):
            raise NotImplementedError(
                "BestExporter(event_file_pattern=%r): the best result is read from the "
                "evaluation's own directory (model_dir/eval or eval_<name>); other patterns "
                "are not supported" % (event_file_pattern,))
        _check_assets_extra(assets_extra, "BestExporter")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._compare_fn = compare_fn
        self._exports_to_keep = _check_exports_to_keep(exports_to_keep)
        self._native = None

    @property
    def name(self):
        return self._name

    def _native_exporter(self, estimator):
        compare = None
        if self._compare_fn is not _loss_smaller:
            user = self._compare_fn

            def compare(best, current):
                return bool(user(best_eval_result=_eval_result(best),
                                 current_eval_result=_eval_result(current)))
        self._native = _loom.BestExporter(
            self._name, estimator._native_serving_fn(self._serving_input_receiver_fn),
            compare_fn=compare, exports_to_keep=self._exports_to_keep)
        return self._native


class FinalExporter(Exporter):
    """tf.estimator.FinalExporter: exports only the final checkpoint (the one training
    ended with), to model_dir/export/<name>/<timestamp>."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        _check_assets_extra(assets_extra, "FinalExporter")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn

    @property
    def name(self):
        return self._name

    def _native_exporter(self, estimator):
        return _loom.FinalExporter(
            self._name, estimator._native_serving_fn(self._serving_input_receiver_fn))


# ---- EstimatorSpec, RunConfig ------------------------------------------------------------

class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
        "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
        "prediction_hooks"])):
    """tf.estimator.EstimatorSpec. Checked when the Estimator uses it: TRAIN needs loss and
    train_op, EVAL loss, PREDICT predictions."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError("mode=%r is not a tf.estimator.ModeKeys value" % (mode,))
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops or {},
                               export_outputs, tuple(training_chief_hooks or ()),
                               tuple(training_hooks or ()), scaffold,
                               tuple(evaluation_hooks or ()), tuple(prediction_hooks or ()))

    def _native(self, graph, build):
        predictions = self.predictions
        if isinstance(predictions, _fw.Tensor):
            build.single_prediction = True
            predictions = {"output": predictions}
        native_predictions = {k: _out(graph, v, "predictions['%s']" % k)
                              for k, v in (predictions or {}).items()}
        metrics = {}
        for name, pair in (self.eval_metric_ops or {}).items():
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError("eval_metric_ops['%s'] must be a (metric_tensor, update_op) "
                                "pair, got %r" % (name, pair))
            metrics[name] = (_out(graph, pair[0], "eval_metric_ops['%s']" % name),
                             _fw._as_operation(graph, pair[1])._node)
        exports = {}
        for name, output in (self.export_outputs or {}).items():
            if not isinstance(output, ExportOutput):
                raise TypeError("export_outputs['%s'] must be an ExportOutput" % name)
            exports[name] = {k: _out(graph, v, "export_outputs") for k, v in
                             output._outputs().items()}
        summary_op = init_op = None
        if self.scaffold is not None:
            summary_op = getattr(self.scaffold, "summary_op", None)
            init_op = getattr(self.scaffold, "init_op", None)
        graph_for = build.graph_for
        return _loom.make_estimator_spec(
            mode=self.mode, predictions=native_predictions,
            loss=None if self.loss is None else _out(graph, self.loss, "loss"),
            train_op=None if self.train_op is None else
            _fw._as_operation(graph, self.train_op)._node,
            eval_metric_ops=metrics, export_outputs=exports,
            training_hooks=_hooks._native_hooks(self.training_hooks, graph_for),
            training_chief_hooks=_hooks._native_hooks(self.training_chief_hooks, graph_for),
            evaluation_hooks=_hooks._native_hooks(self.evaluation_hooks, graph_for),
            prediction_hooks=_hooks._native_hooks(self.prediction_hooks, graph_for),
            init_op=None if init_op is None else _fw._as_operation(graph, init_op)._node,
            summary_op=None if summary_op is None else _out(graph, summary_op, "summary_op"))


def _out(graph, value, what):
    t = _fw.convert_to_tensor(value)
    if t.graph is not graph:
        raise ValueError("%s: %s is not a tensor of the graph the Estimator is building "
                         "(build it inside model_fn)" % (what, t.name))
    return t._out


class RunConfig:
    """tf.estimator.RunConfig. Of session_config (a tf.ConfigProto) only
    intra_op_parallelism_threads is used: the thread count of the Estimator's Sessions.
    device_fn, train_distribute and the cluster settings are accepted and not used (see
    docs/python.md)."""
    _FIELDS = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
               "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
               "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
               "device_fn", "protocol", "eval_distribute", "experimental_distribute",
               "experimental_max_worker_delay_secs", "session_creation_timeout_secs")

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_hooks.USE_DEFAULT,
                 save_checkpoints_secs=_hooks.USE_DEFAULT, session_config=None,
                 keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
                 log_step_count_steps=100, train_distribute=None, device_fn=None,
                 protocol=None, eval_distribute=None, experimental_distribute=None,
                 experimental_max_worker_delay_secs=None, session_creation_timeout_secs=7200):
        if (save_checkpoints_steps is not _hooks.USE_DEFAULT and save_checkpoints_steps is
                not None and save_checkpoints_secs is not _hooks.USE_DEFAULT and
                save_checkpoints_secs is not None):
            raise ValueError("Can not provide both save_checkpoints_secs and "
                             "save_checkpoints_steps. Only one of them must be provided.")
        for k, v in locals().items():
            if k in self._FIELDS:
                setattr(self, "_" + k, v)
        self._native_config = self._make_native()

    def _make_native(self):
        secs, steps = self._save_checkpoints_secs, self._save_checkpoints_steps
        if secs is _hooks.USE_DEFAULT and steps is _hooks.USE_DEFAULT:
            secs, steps = None, None  # C++'s default: every 600 s
        elif secs is _hooks.USE_DEFAULT or steps is _hooks.USE_DEFAULT:
            secs = None if secs is _hooks.USE_DEFAULT else secs
            steps = None if steps is _hooks.USE_DEFAULT else steps
        if secs is None and steps is None and not (
                self._save_checkpoints_secs is _hooks.USE_DEFAULT and
                self._save_checkpoints_steps is _hooks.USE_DEFAULT):
            steps = 0  # both None explicitly: no checkpoints
        return _loom.RunConfig(
            model_dir=self._model_dir or "", tf_random_seed=self._tf_random_seed,
            save_summary_steps=self._save_summary_steps if self._save_summary_steps else 0,
            save_checkpoints_steps=steps, save_checkpoints_secs=secs,
            keep_checkpoint_max=self._keep_checkpoint_max or 0,
            keep_checkpoint_every_n_hours=float(self._keep_checkpoint_every_n_hours),
            log_step_count_steps=self._log_step_count_steps if self._log_step_count_steps
            else 0,
            intra_op_threads=int(getattr(self._session_config,
                                         "intra_op_parallelism_threads", 0) or 0))

    def replace(self, **kwargs):
        unknown = set(kwargs) - set(self._FIELDS)
        if unknown:
            raise ValueError("Replacing %s is not supported" % sorted(unknown))
        args = {k: getattr(self, "_" + k) for k in self._FIELDS}
        args.update(kwargs)
        return RunConfig(**args)

    def __getattr__(self, name):
        if name in RunConfig._FIELDS:
            value = self.__dict__["_" + name]
            return None if value is _hooks.USE_DEFAULT else value
        raise AttributeError(name)

    @property
    def is_chief(self):
        return True

    @property
    def num_worker_replicas(self):
        return 1

    @property
    def num_ps_replicas(self):
        return 0

    @property
    def task_id(self):
        return 0

    @property
    def task_type(self):
        return "worker"

    @property
    def master(self):
        return ""

    @property
    def cluster_spec(self):
        return None

    @property
    def evaluation_master(self):
        return ""

    @property
    def global_id_in_cluster(self):
        return 0


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info",
        "var_name_to_prev_var_name"])):
    """tf.estimator.WarmStartSettings: initialize the variables matching
    vars_to_warm_start (a regex, or a list of them) from a checkpoint (a path or a
    directory; a TensorFlow checkpoint works too). var_name_to_vocab_info is missing."""

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
                var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if var_name_to_vocab_info:
            raise NotImplementedError("WarmStartSettings(var_name_to_vocab_info=...) is not "
                                      "supported")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                               var_name_to_vocab_info, var_name_to_prev_var_name or {})


def _warm_start(warm_start_from):
    """warm_start_from (a path or WarmStartSettings) as the bindings' tuple, or None."""
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        warm_start_from = WarmStartSettings(os.fsdecode(warm_start_from))
    if not isinstance(warm_start_from, WarmStartSettings):
        raise TypeError("warm_start_from must be a path or a tf.estimator.WarmStartSettings, "
                        "got %r" % (warm_start_from,))
    regex = warm_start_from.vars_to_warm_start
    if isinstance(regex, (list, tuple)):
        regex = "|".join("(?:%s)" % r for r in regex)
    elif regex is None:
        regex = ".*"
    return (os.fsdecode(warm_start_from.ckpt_to_initialize_from), regex,
            dict(warm_start_from.var_name_to_prev_var_name))


# ---- building a graph: what one input_fn + model_fn call share ---------------------------

class _Build:
    """The Python side of the graphs one Estimator call builds (train, evaluate, ...):
    the Graph wrappers of the C++ graphs, and per graph how input_fn structured its
    features (so model_fn gets them back as it returned them)."""

    def __init__(self):
        self.graphs = []
        self.single_prediction = False

    def graph_for(self, native_graph, fresh=False, prefix=""):
        graph = _hooks._graph_for(native_graph, fresh=fresh, prefix=prefix)
        if graph not in self.graphs:
            self.graphs.append(graph)
        return graph

    def release(self):
        _hooks._release_graphs(self.graphs)
        self.graphs = []


def _fn_args(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return set(), False
    names = set()
    var_kw = False
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
    return names, var_kw


_SINGLE_FEATURE = "__loom_single_feature__"


def _flatten_features(graph, features):
    """features (a dict of tensors, or one tensor) as a {name: Output} dict."""
    if isinstance(features, dict):
        out = {}
        for k, v in features.items():
            if isinstance(v, dict):
                raise TypeError("input_fn: nested feature dicts are not supported "
                                "(feature '%s')" % k)
            if isinstance(v, _sparse.SparseTensor):  # three entries (feature_column.h)
                for name, t in _sparse._feature_entries(str(k), v).items():
                    out[name] = _out(graph, t, "input_fn feature '%s'" % k)
                continue
            out[str(k)] = _out(graph, v, "input_fn feature '%s'" % k)
        return out, False
    return {_SINGLE_FEATURE: _out(graph, features, "input_fn features")}, True


class _NativeInput:
    """What numpy_input_fn's function returns when called inside a build."""

    def __init__(self, result):
        self.result = result


def _input_result(graph, result):
    """An input_fn's return value as a loom._loom.InputFnResult."""
    from loom.compat.v1 import data as _data
    if isinstance(result, _NativeInput):
        return result.result
    if isinstance(result, _data.Dataset):
        return _dataset_input(graph, result)
    if isinstance(result, (tuple, list)) and len(result) == 2:
        features, labels = result
    else:
        features, labels = result, None
    flat, _ = _flatten_features(graph, features)
    if isinstance(labels, dict):
        raise TypeError("input_fn: labels as a dict are not supported; return one tensor")
    return _loom.InputFnResult(flat, None if labels is None else
                               _out(graph, labels, "input_fn labels"))


_LABELS_COMPONENT = "__loom_labels__"


def _dataset_components(template):
    """For a Dataset element of (features, labels) or features (features a dict of
    tensors, or one tensor; labels one tensor): {component: features key or the labels'
    name}, and whether it has labels. None for any other structure."""
    from loom.compat.v1 import data as _data
    labels = None
    if isinstance(template, tuple) and not hasattr(template, "_fields") and len(template) == 2:
        template, labels = template
        if not isinstance(labels, str):
            return None
    names = {}
    if isinstance(template, dict):
        for key, component in template.items():
            if isinstance(component, _data._SparseLeaf):  # a SparseTensor feature
                for name, part in zip(component, _sparse._FEATURE_PARTS):
                    names[name] = str(key) + part
                continue
            if not isinstance(component, str):
                return None
            names[component] = str(key)
    elif isinstance(template, str):
        names[template] = _SINGLE_FEATURE
    else:
        return None
    if labels is not None:
        names[labels] = _LABELS_COMPONENT
    return names, labels is not None


def _dataset_input(graph, dataset):
    """A Dataset returned by input_fn runs as the C++ Estimator's own input (as TF1's
    Estimator makes the iterator itself): the Estimator's iterator over the dataset, its
    position saved in every checkpoint and restored on resume, so a resumed train sees the
    elements an uninterrupted one would, and evaluate / predict reuse their cached graph.
    The components are renamed to the features' keys and a label component. Other
    element structures get a one-shot iterator made here (the Saver saves its position
    too, but the graph is rebuilt on every call) and are split as tensors."""
    components = _dataset_components(dataset._template)
    if components is None:
        element = dataset.make_one_shot_iterator().get_next()
        return _input_result(graph, element)
    names, has_labels = components
    native = dataset._native
    if any(old != new for old, new in names.items()):
        native = native.rename(names)
    return _loom.InputFnResult(native, _LABELS_COMPONENT if has_labels else "")


class Estimator:
    """tf.estimator.Estimator(model_fn, model_dir=None, config=None, params=None,
    warm_start_from=None)."""

    _single_prediction = False  # the last PREDICT model_fn returned one tensor

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        warm_start = _warm_start(warm_start_from)
        config = self._resolve_config(model_dir, config)
        self._config = config
        self._params = dict(params or {})
        self._model_fn = model_fn
        self._build = None
        if model_fn is not None:
            args, var_kw = _fn_args(model_fn)
            if "features" not in args and not var_kw:
                raise ValueError("model_fn (%s) must include features argument." % model_fn)
            self._model_fn_args = args
            self._model_fn_var_kw = var_kw
            ref = weakref.ref(self)

            def native_model_fn(native_graph, prefix, features, labels, mode):
                return ref()._call_model_fn(native_graph, prefix, features, labels, mode)
            self._native = _loom.Estimator(native_model_fn, config._native_config,
                                           warm_start_from=warm_start)

    @staticmethod
    def _resolve_config(model_dir, config):
        config = config if config is not None else RunConfig()
        if model_dir is not None and config.model_dir is not None and \
                os.path.abspath(model_dir) != os.path.abspath(config.model_dir):
            raise ValueError("model_dir are set both in constructor and RunConfig, but with "
                             "different values. In constructor: '%s', in RunConfig: '%s' "
                             % (model_dir, config.model_dir))
        if model_dir is None and config.model_dir is None:
            model_dir = tempfile.mkdtemp()
            _logging.warning("Using temporary folder as model directory: %s", model_dir)
        if model_dir is not None and config.model_dir != model_dir:
            config = config.replace(model_dir=model_dir)
        return config

    # --- properties ---------------------------------------------------------------------
    @property
    def model_dir(self):
        return self._config.model_dir

    @property
    def config(self):
        return self._config

    @property
    def params(self):
        return dict(self._params)

    @property
    def model_fn(self):
        return self._model_fn

    def latest_checkpoint(self):
        return self._native.latest_checkpoint()

    def get_variable_names(self):
        return self._native.get_variable_names()

    def get_variable_value(self, name):
        return self._native.get_variable_value(name)

    # --- callbacks from C++ -------------------------------------------------------------
    def _call_model_fn(self, native_graph, prefix, features, labels, mode):
        build = self._build
        graph = build.graph_for(native_graph, prefix=prefix)
        with graph.as_default():
            if list(features) == [_SINGLE_FEATURE]:  # input_fn returned one tensor
                features = graph._tensor(features[_SINGLE_FEATURE])
            else:
                features = _sparse._gather_features(
                    {k: graph._tensor(v) for k, v in features.items()})
            kwargs = {"features": features}
            args, var_kw = self._model_fn_args, self._model_fn_var_kw
            if "labels" in args or var_kw:
                kwargs["labels"] = None if labels is None else graph._tensor(labels)
            elif labels is not None:
                raise ValueError("model_fn does not take labels, but input_fn returns labels.")
            if "mode" in args or var_kw:
                kwargs["mode"] = mode
            if "params" in args or var_kw:
                kwargs["params"] = self.params
            elif self._params:
                raise ValueError("model_fn does not take params, but params were given: %s"
                                 % self._params)
            if "config" in args or var_kw:
                kwargs["config"] = self._config
            spec = self._model_fn(**kwargs)
            if not isinstance(spec, EstimatorSpec):
                raise TypeError("model_fn must return an EstimatorSpec, got %r" % (spec,))
            native = spec._native(graph, build)
            if mode == ModeKeys.PREDICT:
                # A predict call whose graph the C++ Estimator cached calls no model_fn.
                self._single_prediction = build.single_prediction
            return native

    def _native_input_fn(self, input_fn, mode):
        """input_fn as what the C++ Estimator calls: a function of (graph, prefix)."""
        native = getattr(input_fn, "_loom_native", None)
        if native is not None:
            return native
        if not callable(input_fn):
            raise TypeError("input_fn must be callable, got %r" % (input_fn,))
        args, var_kw = _fn_args(input_fn)
        ref = weakref.ref(self)

        def call(native_graph, prefix):
            est = ref()
            build = est._build
            graph = build.graph_for(native_graph, fresh=True, prefix=prefix)
            with graph.as_default():
                kwargs = {}
                if "mode" in args:
                    kwargs["mode"] = mode
                if "params" in args:
                    kwargs["params"] = est.params
                if "config" in args:
                    kwargs["config"] = est._config
                if "input_context" in args:
                    kwargs["input_context"] = None
                return _input_result(graph, input_fn(**kwargs))
        return call

    def _run(self, fn):
        outer = self._build
        self._build = _Build()
        try:
            return fn(self._build)
        finally:
            self._build.release()
            self._build = outer

    # --- train / evaluate / predict / export ----------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains `steps` more steps, or until the global step is `max_steps`, or until
        input_fn's data ends. Returns self."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError("Must specify steps > 0, given: %s" % steps)
        if max_steps is not None and max_steps <= 0:
            raise ValueError("Must specify max_steps > 0, given: %s" % max_steps)

        def run(build):
            # C++ logs the final loss and each evaluation's metrics.
            return self._native.train(
                self._native_input_fn(input_fn, ModeKeys.TRAIN), steps=steps,
                max_steps=max_steps, hooks=_hooks._native_hooks(hooks, build.graph_for),
                saving_listeners=_hooks._native_listeners(saving_listeners, build.graph_for))
        _, global_step, _, stop_signal = self._run(run)
        _raise_for_stop_signal(stop_signal, global_step)
        return self

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """The eval_metric_ops' values, "loss" and "global_step", as a dict."""
        if steps is not None and steps <= 0:
            raise ValueError("Must specify steps > 0, given: %s" % steps)

        def run(build):
            return self._native.evaluate(
                self._native_input_fn(input_fn, ModeKeys.EVAL), steps=steps,
                hooks=_hooks._native_hooks(hooks, build.graph_for),
                checkpoint_path=checkpoint_path or "", name=name or "")
        metrics = self._run(run)
        result = {}
        for k, v in metrics.items():
            result[k] = np.int64(v) if k == "global_step" else np.float32(v)
        return result

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """A generator of predictions: dicts of numpy arrays (one example each, or one
        batch with yield_single_examples=False). Nothing runs until the first next()."""
        if isinstance(predict_keys, str):
            predict_keys = [predict_keys]
        build = _Build()
        native_input = self._native_input_fn(input_fn, ModeKeys.PREDICT)

        def generate():
            outer = self._build
            self._build = build
            try:
                it = self._native.predict(native_input, predict_keys=list(predict_keys or []),
                                          hooks=_hooks._native_hooks(hooks, build.graph_for),
                                          checkpoint_path=checkpoint_path or "",
                                          yield_single_examples=yield_single_examples)
                first = next(it, None)
            finally:
                self._build = outer
            if first is None:
                build.release()
                return
            single = self._single_prediction
            try:
                value = first
                while value is not None:
                    yield value["output"] if single else value
                    value = next(it, None)
            finally:
                build.release()
        return generate()

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Writes export_dir_base/<timestamp>/ and returns its path (bytes, as TF)."""
        if assets_extra:
            raise NotImplementedError("export_saved_model(assets_extra=...) is not supported")
        serving = self._native_serving_fn(serving_input_receiver_fn)

        def run(build):
            return self._native.export_saved_model(export_dir_base, serving,
                                                   checkpoint_path or "")
        return self._run(run).encode()

    def _native_serving_fn(self, serving_input_receiver_fn):
        """serving_input_receiver_fn as what the C++ side calls to build a serving graph:
        a function of (graph, prefix) returning (features, receiver tensors)."""
        if not callable(serving_input_receiver_fn):
            raise TypeError("serving_input_receiver_fn must be callable, got %r"
                            % (serving_input_receiver_fn,))
        ref = weakref.ref(self)

        def serving(native_graph, prefix):
            graph = ref()._build.graph_for(native_graph, fresh=True, prefix=prefix)
            with graph.as_default():
                receiver = serving_input_receiver_fn()
                if not hasattr(receiver, "receiver_tensors"):
                    raise TypeError("serving_input_receiver_fn must return a "
                                    "tf.estimator.export.ServingInputReceiver, got %r"
                                    % (receiver,))
                features, _ = _flatten_features(graph, receiver.features)
                receivers, _ = _flatten_features(graph, dict(receiver.receiver_tensors))
                return features, receivers
        return serving

    export_savedmodel = export_saved_model


# ---- numpy_input_fn ----------------------------------------------------------------------

def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """tf.estimator.inputs.numpy_input_fn: batches of the arrays in x (a dict, or one
    array as feature "__feature__"... see docs/python.md) and y. The arrays are viewed
    without a copy when they are C-contiguous and of a dtype Loom has; keep them alive
    while training (the input function holds them). Shuffling permutes indices over the
    whole array (queue_capacity is not a buffer size here)."""
    if shuffle is None:
        raise ValueError("shuffle must be provided explicitly as a bool (True for training, "
                         "False for evaluation and prediction)")
    if isinstance(x, np.ndarray):
        x = {_SINGLE_FEATURE: x}
    if not isinstance(x, dict):
        raise TypeError("x must be a dict or array; got %s" % type(x).__name__)
    if isinstance(y, dict):
        raise TypeError("numpy_input_fn: y as a dict is not supported; pass one array")
    arrays = {str(k): np.ascontiguousarray(v) for k, v in x.items()}
    labels = None if y is None else np.ascontiguousarray(y)
    native = _loom.array_input_fn(arrays, labels, batch_size=batch_size, num_epochs=num_epochs,
                                  shuffle=bool(shuffle))

    def input_fn():
        # Called by the user's own input_fn (a lambda): build in the default graph.
        graph = _fw.get_default_graph()
        return _NativeInput(_loom.call_input_fn(native, graph._g, graph.get_name_scope()))
    input_fn._loom_native = native
    input_fn._arrays = (arrays, labels)  # the Tensors view these
    return input_fn


class inputs:
    numpy_input_fn = staticmethod(numpy_input_fn)


# ---- train_and_evaluate ------------------------------------------------------------------

class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks"])):
    def __new__(cls, input_fn, max_steps=None, hooks=None):
        if max_steps is not None and max_steps <= 0:
            raise ValueError("Must specify max_steps > 0, given: %s" % max_steps)
        return super().__new__(cls, input_fn, max_steps, tuple(hooks or ()))


class EvalSpec(collections.namedtuple("EvalSpec", [
        "input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs",
        "throttle_secs"])):
    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None,
                start_delay_secs=120, throttle_secs=600):
        if throttle_secs <= 0:
            raise ValueError("Must specify throttle_secs > 0, given: %s" % throttle_secs)
        return super().__new__(cls, input_fn, steps, name, tuple(hooks or ()),
                               _validate_exporters(exporters), start_delay_secs, throttle_secs)


def _validate_exporters(exporters):
    """EvalSpec's exporters as a tuple of Exporters with unique names (TF's checks)."""
    if exporters is None:
        return ()
    if not isinstance(exporters, (list, tuple)):
        exporters = [exporters]
    names = set()
    for exporter in exporters:
        if not isinstance(exporter, Exporter):
            raise TypeError("`exporters` must be an Exporter, an iterable of Exporter, or "
                            "`None`, found %s." % (exporter,))
        if not exporter.name:
            full_list_of_names = [e.name for e in exporters]
            raise ValueError("An Exporter cannot have a name that is `None` or empty. All "
                             "exporter names: %s" % full_list_of_names)
        if not isinstance(exporter.name, str):
            raise ValueError("An Exporter must have a string name. Given: %s"
                             % type(exporter.name))
        if exporter.name in names:
            full_list_of_names = [e.name for e in exporters]
            raise ValueError("`exporters` must have unique names. Such a name cannot be "
                             "`None`. All exporter names: %s" % full_list_of_names)
        names.add(exporter.name)
    return tuple(exporters)


def _raise_for_stop_signal(signum, global_step):
    """After C++ training stopped cleanly on a signal (the step in flight finished, every
    hook's end ran, the final checkpoint was written), what Python does on that signal:
    SIGINT (Ctrl-C) raises KeyboardInterrupt, SIGTERM and SIGUSR1 (Slurm's preemption
    warning) raise SystemExit(128 + signal), as `loom train` exits. Returning normally would
    let the script go on (the next train() of a loop, an evaluate) as if training had
    finished."""
    if not signum:
        return
    import signal as _signal
    at = "" if global_step is None else " at global step %d" % global_step
    if signum == _signal.SIGINT:
        raise KeyboardInterrupt("training stopped by SIGINT%s; the final checkpoint was "
                                "saved, train() again resumes from it" % at)
    raise SystemExit(128 + signum)


def train_and_evaluate(estimator, train_spec, eval_spec):
    """tf.estimator.train_and_evaluate (local): trains to train_spec.max_steps, evaluating
    after checkpoints (throttled) and at the end. Returns (eval_result, export_results)."""

    def run(build):
        native_train = _loom.TrainSpec(
            estimator._native_input_fn(train_spec.input_fn, ModeKeys.TRAIN),
            max_steps=train_spec.max_steps,
            hooks=_hooks._native_hooks(train_spec.hooks, build.graph_for))
        native_eval = _loom.EvalSpec(
            estimator._native_input_fn(eval_spec.input_fn, ModeKeys.EVAL),
            steps=eval_spec.steps, name=eval_spec.name or "",
            hooks=_hooks._native_hooks(eval_spec.hooks, build.graph_for),
            start_delay_secs=float(eval_spec.start_delay_secs),
            throttle_secs=float(eval_spec.throttle_secs),
            exporters=[e._native_exporter(estimator) for e in eval_spec.exporters])
        return _loom.train_and_evaluate(estimator._native, native_train, native_eval)
    result, exports, stop_signal = estimator._run(run)
    _raise_for_stop_signal(stop_signal, None)
    return {k: (np.int64(v) if k == "global_step" else np.float32(v))
            for k, v in result.items()}, exports


# ---- canned estimators -------------------------------------------------------------------

def _optimizer_spec(optimizer):
    """TF's optimizer argument as Loom's: a name, or a tf.train optimizer instance (its
    class's short name and learning rate)."""
    if optimizer is None or isinstance(optimizer, str):
        return optimizer
    if callable(optimizer) and not hasattr(optimizer, "_opt"):
        optimizer = optimizer()
    names = {"GradientDescentOptimizer": "SGD", "AdamOptimizer": "Adam",
             "AdagradOptimizer": "Adagrad", "RMSPropOptimizer": "RMSProp",
             "FtrlOptimizer": "Ftrl", "MomentumOptimizer": "Momentum"}
    name = names.get(type(optimizer).__name__)
    lr = getattr(optimizer, "_lr", None)
    if lr is None and getattr(optimizer, "_args", None):
        lr = optimizer._args[0]
    if name is None or not isinstance(lr, (int, float)):
        raise NotImplementedError(
            "canned estimators take optimizer as a name ('Adam', 'Adagrad', 'Ftrl', "
            "'RMSProp', 'SGD') or a tf.train optimizer with a constant learning rate; got %r"
            % (optimizer,))
    return (name, float(lr))


def _columns(feature_columns):
    from loom.compat.v1 import feature_column as _fc
    return [_fc._native(c) for c in feature_columns]


class _Canned(Estimator):
    def _init_canned(self, native, config):
        self._config = config
        self._params = {}
        self._model_fn = None
        self._build = None
        self._native = native


def _activation_name(activation_fn):
    """A canned DNN's activation_fn (one of TF's tf.nn functions) as the C++ side's name:
    the C++ estimator builds the activation itself, so only these are known."""
    from loom.compat.v1 import nn as _nn
    if activation_fn is None:
        return "relu"
    names = {"relu": _nn.relu, "tanh": _nn.tanh, "sigmoid": _nn.sigmoid, "elu": _nn.elu,
             "relu6": _nn.relu6, "softplus": _nn.softplus, "leaky_relu": _nn.leaky_relu}
    for name, fn in names.items():
        if activation_fn is fn:
            return name
    raise NotImplementedError(
        "canned DNN estimators take activation_fn as one of tf.nn.%s; got %r"
        % (", tf.nn.".join(names), activation_fn))


# TF 1.15's canned estimators (tf.estimator.DNNClassifier, ..., the v1 ones) sum the
# per-example losses of a batch (tf.losses.Reduction.SUM); TF 2's divide by the batch size.
_SUM = "weighted_sum"


def _loss_reduction(value):
    """A canned estimator's loss_reduction, checked as TF's heads check it."""
    from loom.compat.v1.losses import Reduction
    if value not in Reduction.all() or value == Reduction.NONE:
        raise ValueError("Invalid loss_reduction: {}".format(value))
    return value


class DNNClassifier(_Canned):
    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=None, dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=_SUM, batch_norm=False):
        activation = _activation_name(activation_fn)
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.DNNClassifier(
            list(hidden_units), _columns(feature_columns), n_classes, weight_column or "",
            list(label_vocabulary or []), _optimizer_spec(optimizer), dropout, batch_norm,
            config._native_config, warm_start_from=_warm_start(warm_start_from),
            activation_fn=activation,
            loss_reduction=_loss_reduction(loss_reduction)), config)


class DNNRegressor(_Canned):
    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=None, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=_SUM, batch_norm=False):
        activation = _activation_name(activation_fn)
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.DNNRegressor(
            list(hidden_units), _columns(feature_columns), label_dimension,
            weight_column or "", _optimizer_spec(optimizer), dropout, batch_norm,
            config._native_config, warm_start_from=_warm_start(warm_start_from),
            activation_fn=activation,
            loss_reduction=_loss_reduction(loss_reduction)), config)


class LinearClassifier(_Canned):
    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=_SUM, sparse_combiner="sum"):
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.LinearClassifier(
            _columns(feature_columns), n_classes, weight_column or "",
            list(label_vocabulary or []), _optimizer_spec(optimizer), config._native_config,
            warm_start_from=_warm_start(warm_start_from),
            loss_reduction=_loss_reduction(loss_reduction)), config)


class LinearRegressor(_Canned):
    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=_SUM, sparse_combiner="sum"):
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.LinearRegressor(
            _columns(feature_columns), label_dimension, weight_column or "",
            _optimizer_spec(optimizer), config._native_config,
            warm_start_from=_warm_start(warm_start_from),
            loss_reduction=_loss_reduction(loss_reduction)), config)


def _check_combined(linear_feature_columns, dnn_feature_columns, dnn_hidden_units,
                    dnn_activation_fn):
    """TF's argument checks of the DNNLinearCombined estimators."""
    linear_feature_columns = list(linear_feature_columns or [])
    dnn_feature_columns = list(dnn_feature_columns or [])
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                         "defined.")
    if dnn_feature_columns and not dnn_hidden_units:
        raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is "
                         "specified.")
    return linear_feature_columns, dnn_feature_columns, list(dnn_hidden_units or [])


class DNNLinearCombinedClassifier(_Canned):
    """tf.estimator.DNNLinearCombinedClassifier (wide & deep): the logits are the sum of
    a linear model's over linear_feature_columns and a DNN's over dnn_feature_columns,
    each part trained by its own optimizer (the C++ DNNLinearCombinedClassifier,
    loom/estimator/canned.h)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=_SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        linear, dnn, hidden = _check_combined(linear_feature_columns, dnn_feature_columns,
                                              dnn_hidden_units, dnn_activation_fn)
        activation = _activation_name(dnn_activation_fn)
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.DNNLinearCombinedClassifier(
            _columns(linear), _optimizer_spec(linear_optimizer), _columns(dnn),
            _optimizer_spec(dnn_optimizer), hidden, dnn_dropout, n_classes,
            weight_column or "", list(label_vocabulary or []), batch_norm,
            linear_sparse_combiner, config._native_config,
            warm_start_from=_warm_start(warm_start_from), dnn_activation_fn=activation,
            loss_reduction=_loss_reduction(loss_reduction)), config)


class DNNLinearCombinedRegressor(_Canned):
    """tf.estimator.DNNLinearCombinedRegressor (wide & deep regression; see
    DNNLinearCombinedClassifier)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=_SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        linear, dnn, hidden = _check_combined(linear_feature_columns, dnn_feature_columns,
                                              dnn_hidden_units, dnn_activation_fn)
        activation = _activation_name(dnn_activation_fn)
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.DNNLinearCombinedRegressor(
            _columns(linear), _optimizer_spec(linear_optimizer), _columns(dnn),
            _optimizer_spec(dnn_optimizer), hidden, dnn_dropout, label_dimension,
            weight_column or "", batch_norm, linear_sparse_combiner, config._native_config,
            warm_start_from=_warm_start(warm_start_from), dnn_activation_fn=activation,
            loss_reduction=_loss_reduction(loss_reduction)), config)


# ---- tf.contrib.predictor ----------------------------------------------------------------

class _SavedModelPredictor:
    """What tf.contrib.predictor.from_saved_model returns: call it with a dict of numpy
    inputs (the signature's input keys) to get a dict of numpy outputs."""

    def __init__(self, export_dir, signature_def_key):
        self._native = _loom.SavedModelPredictor(os.fsdecode(export_dir))
        self._signature = signature_def_key or "serving_default"
        if self._signature not in self._native.signature_keys:
            raise ValueError("Could not find signature def key %s. Available keys: %s"
                             % (self._signature, self._native.signature_keys))

    @property
    def signature_keys(self):
        return list(self._native.signature_keys)

    @property
    def input_keys(self):
        """The signature's inputs; a SparseTensor receiver is one key (fed a
        SparseTensorValue), though the signature holds its three tensors."""
        return sorted(_sparse._gather_features(
            {k: k for k in self._native.signature_inputs(self._signature)}, join=False))

    @property
    def global_step(self):
        return self._native.global_step

    def __call__(self, input_dict):
        inputs = {}
        names = set(self._native.signature_inputs(self._signature))
        for key, value in dict(input_dict).items():
            if key not in names and key + "/indices" in names and \
                    isinstance(value, (tuple, list)) and len(value) == 3:
                inputs.update(_sparse._feature_entries(key, _sparse.SparseTensorValue(*value)))
            else:
                inputs[key] = value
        return self._native.predict(inputs, self._signature)


def from_saved_model(export_dir, signature_def_key=None, signature_def=None,
                     input_names=None, output_names=None, tags=None, graph=None, config=None):
    """tf.contrib.predictor.from_saved_model over Loom's SavedModel directory (what
    export_saved_model and the exporters write). signature_def, input_names,
    output_names, tags, graph and config are not supported."""
    for what, value in (("signature_def", signature_def), ("input_names", input_names),
                        ("output_names", output_names), ("graph", graph)):
        if value is not None:
            raise NotImplementedError("from_saved_model(%s=...) is not supported" % what)
    return _SavedModelPredictor(export_dir, signature_def_key)


# tf.estimator re-exports the hook types.
SessionRunHook = _hooks.SessionRunHook
SessionRunArgs = _hooks.SessionRunArgs
SessionRunContext = _hooks.SessionRunContext
SessionRunValues = _hooks.SessionRunValues
CheckpointSaverListener = _hooks.CheckpointSaverListener
