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
from loom.compat.v1 import logging as _logging
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


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """tf.estimator.export.build_raw_serving_input_receiver_fn: one placeholder per
    feature, of the feature's dtype and shape with the batch dimension free."""

    def serving_input_receiver_fn():
        receivers = {}
        for name, t in features.items():
            shape = t.shape.dims
            if shape is not None and shape:
                shape = [default_batch_size] + shape[1:]
            receivers[name] = _fw.placeholder(t.dtype, shape, name=name)
        return ServingInputReceiver(dict(receivers), receivers)
    return serving_input_receiver_fn


class _Export:
    ServingInputReceiver = ServingInputReceiver
    PredictOutput = PredictOutput
    ClassificationOutput = ClassificationOutput
    RegressionOutput = RegressionOutput
    ExportOutput = ExportOutput
    build_raw_serving_input_receiver_fn = staticmethod(build_raw_serving_input_receiver_fn)


export = _Export


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


def _dataset_input(graph, dataset):
    """A Dataset returned by input_fn: its iterator is made here (one-shot), as TF1's
    Estimator does for a dataset, and its next element split into features and labels."""
    element = dataset.make_one_shot_iterator().get_next()
    return _input_result(graph, element)


class Estimator:
    """tf.estimator.Estimator(model_fn, model_dir=None, config=None, params=None,
    warm_start_from=None)."""

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
                features = {k: graph._tensor(v) for k, v in features.items()}
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
            return spec._native(graph, build)

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
        if saving_listeners:
            raise NotImplementedError("train(saving_listeners=...) is not supported from "
                                      "Python yet")

        def run(build):
            # C++ logs the final loss and each evaluation's metrics.
            self._native.train(self._native_input_fn(input_fn, ModeKeys.TRAIN), steps=steps,
                               max_steps=max_steps,
                               hooks=_hooks._native_hooks(hooks, build.graph_for))
        self._run(run)
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
            single = build.single_prediction
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
        ref = weakref.ref(self)

        def serving(native_graph, prefix):
            graph = ref()._build.graph_for(native_graph, fresh=True, prefix=prefix)
            with graph.as_default():
                receiver = serving_input_receiver_fn()
                features, _ = _flatten_features(graph, receiver.features)
                receivers = {k: _out(graph, v, "receiver_tensors['%s']" % k)
                             for k, v in receiver.receiver_tensors.items()}
                return features, receivers

        def run(build):
            return self._native.export_saved_model(export_dir_base, serving,
                                                   checkpoint_path or "")
        return self._run(run).encode()

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
        if exporters:
            raise NotImplementedError("EvalSpec(exporters=...) is not supported from Python "
                                      "yet; call export_saved_model after training")
        if throttle_secs <= 0:
            raise ValueError("Must specify throttle_secs > 0, given: %s" % throttle_secs)
        return super().__new__(cls, input_fn, steps, name, tuple(hooks or ()), exporters,
                               start_delay_secs, throttle_secs)


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
            throttle_secs=float(eval_spec.throttle_secs))
        return _loom.train_and_evaluate(estimator._native, native_train, native_eval)
    result, exports = estimator._run(run)
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


def _check_activation(activation_fn):
    from loom.compat.v1 import nn as _nn
    if activation_fn is not None and activation_fn is not _nn.relu:
        raise NotImplementedError("canned DNN estimators use tf.nn.relu; another "
                                  "activation_fn is not supported from Python yet")


class DNNClassifier(_Canned):
    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=None, dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False):
        _check_activation(activation_fn)
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.DNNClassifier(
            list(hidden_units), _columns(feature_columns), n_classes, weight_column or "",
            list(label_vocabulary or []), _optimizer_spec(optimizer), dropout, batch_norm,
            config._native_config), config)


class DNNRegressor(_Canned):
    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=None, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=None, batch_norm=False):
        _check_activation(activation_fn)
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.DNNRegressor(
            list(hidden_units), _columns(feature_columns), label_dimension,
            weight_column or "", _optimizer_spec(optimizer), dropout, batch_norm,
            config._native_config), config)


class LinearClassifier(_Canned):
    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=None, sparse_combiner="sum"):
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.LinearClassifier(
            _columns(feature_columns), n_classes, weight_column or "",
            list(label_vocabulary or []), _optimizer_spec(optimizer), config._native_config),
            config)


class LinearRegressor(_Canned):
    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=None, sparse_combiner="sum"):
        config = self._resolve_config(model_dir, config)
        self._init_canned(_loom.LinearRegressor(
            _columns(feature_columns), label_dimension, weight_column or "",
            _optimizer_spec(optimizer), config._native_config), config)


# tf.estimator re-exports the hook types.
SessionRunHook = _hooks.SessionRunHook
SessionRunArgs = _hooks.SessionRunArgs
SessionRunContext = _hooks.SessionRunContext
SessionRunValues = _hooks.SessionRunValues
