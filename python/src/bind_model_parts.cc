// What model functions build with, for Python: tf.layers, tf.losses, tf.metrics and
// tf.feature_column over the estimator layer's C++ (layers.h, losses.h, metrics.h,
// feature_column.h), so variables, scopes and collections are named exactly as the C++
// API names them (and as TF does). Every builder takes the graph and the package's
// current name scope (`prefix`), as the core's builders do (core.h MakeScope).
// Activations are applied by loom/compat/v1/layers.py, so any Python activation works.
// Initializers arrive as None (the layer's default) or a (kind, params) pair made by
// layers.py from tf.*_initializer objects. Regularizers arrive as None or a Python
// callable (name scope prefix, variable) -> penalty Output or None (layers.py wraps TF's
// regularizer functions so); a None penalty adds nothing, as in TF. A variable getter
// arrives as None or a Python callable (name, shape, dtype name, trainable, make) -> the
// variable's Output, where make(variable_scope) builds it as the layer would (layers.h
// VariableGetter); layers.py passes one that applies TF1's variable scopes.
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/estimator/feature_column.h"
#include "loom/estimator/initializers.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/estimator/metrics.h"
#include "loom/ops/sparse.h"
#include "python/src/bind_util.h"
#include "python/src/core.h"

namespace py = pybind11;

namespace loom::python {

namespace fc = feature_column;
namespace init = initializers;

// (kind, params) -> an Initializer; None -> empty (the layer's default).
init::Initializer ToInitializer(const py::handle& spec) {
  if (spec.is_none()) return {};
  auto pair = spec.cast<py::tuple>();
  const auto kind = pair[0].cast<std::string>();
  const py::dict params = pair[1].cast<py::dict>();
  auto get = [&](const char* key, double fallback) {
    return params.contains(key) && !params[key].is_none() ? params[key].cast<double>() : fallback;
  };
  const int64_t seed = params.contains("seed") && !params["seed"].is_none()
                           ? params["seed"].cast<int64_t>()
                           : kNoSeed;
  if (kind == "zeros") return init::Zeros();
  if (kind == "ones") return init::Ones();
  if (kind == "constant") return init::Constant(get("value", 0));
  if (kind == "glorot_uniform") return init::GlorotUniform({.seed = seed});
  if (kind == "glorot_normal") return init::GlorotNormal({.seed = seed});
  if (kind == "he_normal") return init::HeNormal({.seed = seed});
  if (kind == "he_uniform") return init::HeUniform({.seed = seed});
  if (kind == "random_normal") {
    return init::RandomNormal({.mean = get("mean", 0), .stddev = get("stddev", 1), .seed = seed});
  }
  if (kind == "truncated_normal") {
    return init::TruncatedNormal(
        {.mean = get("mean", 0), .stddev = get("stddev", 1), .seed = seed});
  }
  if (kind == "random_uniform") {
    return init::RandomUniform(
        {.minval = get("minval", 0), .maxval = get("maxval", 1), .seed = seed});
  }
  if (kind == "variance_scaling") {
    const auto mode = params["mode"].cast<std::string>();
    const auto distribution = params["distribution"].cast<std::string>();
    init::VarianceScalingOptions options{.scale = get("scale", 1), .seed = seed};
    options.mode = mode == "fan_out"   ? init::FanMode::kFanOut
                   : mode == "fan_avg" ? init::FanMode::kFanAvg
                                       : init::FanMode::kFanIn;
    options.distribution = distribution == "uniform" ? init::Distribution::kUniform
                           : distribution == "untruncated_normal"
                               ? init::Distribution::kNormal
                               : init::Distribution::kTruncatedNormal;
    return init::VarianceScaling(options);
  }
  throw InvalidArgument("initializer kind '", kind,
                        "' is not one Loom knows: zeros, ones, constant, glorot_uniform, "
                        "glorot_normal, he_normal, he_uniform, random_normal, "
                        "truncated_normal, random_uniform, variance_scaling");
}

layers::Size2D ToSize(const py::handle& value) {
  if (py::isinstance<py::int_>(value)) return layers::Size2D(value.cast<int64_t>());
  auto v = value.cast<std::vector<int64_t>>();
  if (v.size() == 1) return layers::Size2D(v[0]);
  if (v.size() != 2) {
    throw InvalidArgument("a 2-D size must be an int or a pair of ints, got ", v.size(), " values");
  }
  return layers::Size2D(v[0], v[1]);
}

losses::Reduction ToReduction(const std::string& reduction) {
  if (reduction == "none") return losses::Reduction::kNone;
  if (reduction == "weighted_sum") return losses::Reduction::kSum;
  if (reduction == "weighted_mean") return losses::Reduction::kMean;
  if (reduction == "weighted_sum_over_batch_size") return losses::Reduction::kSumOverBatchSize;
  if (reduction == "weighted_sum_by_nonzero_weights") {
    return losses::Reduction::kSumByNonzeroWeights;
  }
  throw InvalidArgument("reduction '", reduction,
                        "' is not a tf.losses.Reduction: none, weighted_sum, weighted_mean, "
                        "weighted_sum_over_batch_size, weighted_sum_by_nonzero_weights");
}

namespace {

losses::LossOptions ToLossOptions(std::optional<Output> weights, const std::string& reduction,
                                  double label_smoothing = 0, double delta = 1.0) {
  losses::LossOptions options;
  if (weights) options.weights = *weights;
  options.reduction = ToReduction(reduction);
  options.label_smoothing = label_smoothing;
  options.delta = delta;
  return options;
}

metrics::MetricOptions ToMetricOptions(std::optional<Output> weights, std::string name) {
  metrics::MetricOptions options;
  if (weights) options.weights = *weights;
  options.name = std::move(name);
  return options;
}

// (value, update op node): the update node's output 0 is the value after the update.
py::tuple FromMetric(const metrics::Metric& metric) {
  return py::make_tuple(metric.value,
                        py::cast(metric.update_op.node, py::return_value_policy::reference));
}

ColumnHandle Handle(fc::FeatureColumnPtr column) {
  ColumnHandle h;
  h.any = column;
  h.dense = std::dynamic_pointer_cast<const fc::DenseColumn>(column);
  h.categorical = std::dynamic_pointer_cast<const fc::CategoricalColumn>(column);
  return h;
}

fc::CategoricalColumnPtr Categorical(const ColumnHandle& h, const char* who) {
  if (h.categorical == nullptr) {
    throw InvalidArgument(who, ": the column is not categorical (", h.any->name(),
                          "); pass a categorical_column_with_* or bucketized_column");
  }
  return h.categorical;
}

fc::Combiner ToCombiner(const std::string& combiner) {
  if (combiner == "sum") return fc::Combiner::kSum;
  if (combiner == "mean") return fc::Combiner::kMean;
  if (combiner == "sqrtn") return fc::Combiner::kSqrtN;
  throw InvalidArgument("combiner '", combiner, "' must be 'sum', 'mean' or 'sqrtn'");
}

Features ToFeatures(std::map<std::string, Output> features) {
  return Features(std::move(features));
}

}  // namespace

// A Python regularizer (see the file comment) as a layers::Regularizer. The layer calls it
// while it is being built, from the Python call that builds it, so the GIL is held.
layers::Regularizer ToRegularizer(const py::object& regularizer) {
  if (regularizer.is_none()) return {};
  return [fn = PyRef(regularizer)](const Scope& scope, Output variable) -> Output {
    py::object penalty = fn.get()(scope.prefix(), variable);
    if (penalty.is_none()) return Output();
    return penalty.cast<Output>();
  };
}

// A Python variable getter (see the file comment) as a layers::VariableGetter; called
// while the layer is built, from the Python call that builds it, so the GIL is held.
layers::VariableGetter ToVariableGetter(const py::object& getter) {
  if (getter.is_none()) return {};
  return [fn = PyRef(getter)](const layers::VariableRequest& request) -> Output {
    // `make` is only valid during this call; the getter must not keep it.
    py::cpp_function make(
        [&request](const std::string& variable_scope) { return request.make(variable_scope); });
    py::object variable = fn.get()(request.name, request.shape.dims().ToVector(),
                                   DTypeName(request.dtype), request.trainable, make);
    return variable.cast<Output>();
  };
}

namespace {

// tf.layers' training argument: a Python bool or a bool tensor.
layers::TrainingFlag ToTrainingFlag(const py::object& training) {
  if (py::isinstance<py::bool_>(training)) return training.cast<bool>();
  return training.cast<Output>();
}

void BindLayers(py::module_& m) {
  m.def(
      "layers_dense",
      [](Graph& g, const std::string& prefix, Output inputs, int64_t units, bool use_bias,
         const py::object& kernel_initializer, const py::object& bias_initializer, bool trainable,
         std::string name, const py::object& kernel_regularizer, const py::object& bias_regularizer,
         const py::object& variable_getter) {
        return layers::Dense(MakeScope(g, prefix), inputs,
                             {.units = units,
                              .use_bias = use_bias,
                              .kernel_initializer = ToInitializer(kernel_initializer),
                              .bias_initializer = ToInitializer(bias_initializer),
                              .kernel_regularizer = ToRegularizer(kernel_regularizer),
                              .bias_regularizer = ToRegularizer(bias_regularizer),
                              .trainable = trainable,
                              .name = std::move(name),
                              .variable_getter = ToVariableGetter(variable_getter)});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"), py::arg("units"), py::arg("use_bias"),
      py::arg("kernel_initializer"), py::arg("bias_initializer"), py::arg("trainable"),
      py::arg("name"), py::arg("kernel_regularizer") = py::none(),
      py::arg("bias_regularizer") = py::none(), py::arg("variable_getter") = py::none());
  m.def(
      "layers_conv2d",
      [](Graph& g, const std::string& prefix, Output inputs, int64_t filters,
         const py::object& kernel_size, const py::object& strides, std::string padding,
         bool use_bias, const py::object& kernel_initializer, const py::object& bias_initializer,
         bool trainable, std::string name, const py::object& kernel_regularizer,
         const py::object& bias_regularizer, const py::object& variable_getter,
         const py::object& dilation_rate) {
        return layers::Conv2D(MakeScope(g, prefix), inputs,
                              {.filters = filters,
                               .kernel_size = ToSize(kernel_size),
                               .strides = ToSize(strides),
                               .padding = std::move(padding),
                               .dilation_rate = ToSize(dilation_rate),
                               .use_bias = use_bias,
                               .kernel_initializer = ToInitializer(kernel_initializer),
                               .bias_initializer = ToInitializer(bias_initializer),
                               .kernel_regularizer = ToRegularizer(kernel_regularizer),
                               .bias_regularizer = ToRegularizer(bias_regularizer),
                               .trainable = trainable,
                               .name = std::move(name),
                               .variable_getter = ToVariableGetter(variable_getter)});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"), py::arg("filters"),
      py::arg("kernel_size"), py::arg("strides"), py::arg("padding"), py::arg("use_bias"),
      py::arg("kernel_initializer"), py::arg("bias_initializer"), py::arg("trainable"),
      py::arg("name"), py::arg("kernel_regularizer") = py::none(),
      py::arg("bias_regularizer") = py::none(), py::arg("variable_getter") = py::none(),
      py::arg("dilation_rate") = 1);
  m.def(
      "layers_pooling2d",
      [](Graph& g, const std::string& prefix, const std::string& kind, Output inputs,
         const py::object& pool_size, const py::object& strides, std::string padding,
         std::string name) {
        layers::Pooling2DOptions options{
            .pool_size = ToSize(pool_size),
            .strides = strides.is_none() ? layers::Size2D() : ToSize(strides),
            .padding = std::move(padding),
            .name = std::move(name)};
        Scope s = MakeScope(g, prefix);
        return kind == "max" ? layers::MaxPooling2D(s, inputs, options)
                             : layers::AveragePooling2D(s, inputs, options);
      },
      py::arg("graph"), py::arg("prefix"), py::arg("kind"), py::arg("inputs"), py::arg("pool_size"),
      py::arg("strides"), py::arg("padding"), py::arg("name"));
  m.def(
      "layers_flatten",
      [](Graph& g, const std::string& prefix, Output inputs) {
        return layers::Flatten(MakeScope(g, prefix), inputs);
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"));
  m.def(
      "layers_dropout",
      [](Graph& g, const std::string& prefix, Output inputs, double rate, bool training,
         py::object seed, std::string name) {
        return layers::Dropout(MakeScope(g, prefix), inputs,
                               {.rate = rate,
                                .training = training,
                                .seed = OptionalInt(seed).value_or(kNoSeed),
                                .name = std::move(name)});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"), py::arg("rate"), py::arg("training"),
      py::arg("seed"), py::arg("name"));
  m.def(
      "layers_batch_normalization",
      [](Graph& g, const std::string& prefix, Output inputs, int64_t axis, double momentum,
         double epsilon, bool center, bool scale, const py::object& training, bool trainable,
         std::string name, const py::object& beta_initializer, const py::object& gamma_initializer,
         const py::object& moving_mean_initializer, const py::object& moving_variance_initializer,
         const py::object& variable_getter, bool unbiased_moving_variance) {
        return layers::BatchNormalization(
            MakeScope(g, prefix), inputs,
            {.axis = axis,
             .momentum = momentum,
             .epsilon = epsilon,
             .center = center,
             .scale = scale,
             .training = ToTrainingFlag(training),
             .beta_initializer = ToInitializer(beta_initializer),
             .gamma_initializer = ToInitializer(gamma_initializer),
             .moving_mean_initializer = ToInitializer(moving_mean_initializer),
             .moving_variance_initializer = ToInitializer(moving_variance_initializer),
             .trainable = trainable,
             .name = std::move(name),
             .variable_getter = ToVariableGetter(variable_getter),
             .unbiased_moving_variance = unbiased_moving_variance});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"), py::arg("axis"), py::arg("momentum"),
      py::arg("epsilon"), py::arg("center"), py::arg("scale"), py::arg("training"),
      py::arg("trainable"), py::arg("name"), py::arg("beta_initializer") = py::none(),
      py::arg("gamma_initializer") = py::none(), py::arg("moving_mean_initializer") = py::none(),
      py::arg("moving_variance_initializer") = py::none(), py::arg("variable_getter") = py::none(),
      py::arg("unbiased_moving_variance") = false);
}

void BindLosses(py::module_& m) {
  // One entry point for the losses of the (labels, logits-or-predictions) shape.
  m.def(
      "loss",
      [](Graph& g, const std::string& prefix, const std::string& kind, Output labels, Output values,
         std::optional<Output> weights, const std::string& reduction, double label_smoothing,
         double delta, double epsilon, int64_t axis) {
        Scope s = MakeScope(g, prefix);
        auto options = ToLossOptions(weights, reduction, label_smoothing, delta);
        if (kind == "softmax_cross_entropy") {
          return losses::SoftmaxCrossEntropy(s, labels, values, options);
        }
        if (kind == "sparse_softmax_cross_entropy") {
          return losses::SparseSoftmaxCrossEntropy(s, labels, values, options);
        }
        if (kind == "sigmoid_cross_entropy") {
          return losses::SigmoidCrossEntropy(s, labels, values, options);
        }
        if (kind == "mean_squared_error")
          return losses::MeanSquaredError(s, labels, values, options);
        if (kind == "absolute_difference") {
          return losses::AbsoluteDifference(s, labels, values, options);
        }
        if (kind == "huber_loss") return losses::HuberLoss(s, labels, values, options);
        if (kind == "hinge_loss") return losses::HingeLoss(s, labels, values, options);
        if (kind == "log_loss") {
          options.epsilon = epsilon;
          return losses::LogLoss(s, labels, values, options);
        }
        if (kind == "cosine_distance") {
          return losses::CosineDistance(s, labels, values, axis, options);
        }
        throw InvalidArgument("no loss named '", kind, "'");
      },
      py::arg("graph"), py::arg("prefix"), py::arg("kind"), py::arg("labels"), py::arg("values"),
      py::arg("weights"), py::arg("reduction"), py::arg("label_smoothing") = 0.0,
      py::arg("delta") = 1.0, py::arg("epsilon") = 1e-7, py::arg("axis") = -1);
  m.def(
      "compute_weighted_loss",
      [](Graph& g, const std::string& prefix, Output values, std::optional<Output> weights,
         const std::string& reduction) {
        std::optional<Input> w;
        if (weights) w = *weights;
        return losses::ComputeWeightedLoss(MakeScope(g, prefix), values, w, ToReduction(reduction));
      },
      py::arg("graph"), py::arg("prefix"), py::arg("losses"), py::arg("weights"),
      py::arg("reduction"));
}

void BindMetrics(py::module_& m) {
  m.def(
      "metric",
      [](Graph& g, const std::string& prefix, const std::string& kind, Output labels,
         Output predictions, std::optional<Output> weights, std::string name) {
        Scope s = MakeScope(g, prefix);
        auto options = ToMetricOptions(weights, std::move(name));
        if (kind == "accuracy")
          return FromMetric(metrics::Accuracy(s, labels, predictions, options));
        if (kind == "mean_squared_error") {
          return FromMetric(metrics::MeanSquaredError(s, labels, predictions, options));
        }
        if (kind == "root_mean_squared_error") {
          return FromMetric(metrics::RootMeanSquaredError(s, labels, predictions, options));
        }
        if (kind == "mean_absolute_error") {
          return FromMetric(metrics::MeanAbsoluteError(s, labels, predictions, options));
        }
        if (kind == "precision")
          return FromMetric(metrics::Precision(s, labels, predictions, options));
        if (kind == "recall") return FromMetric(metrics::Recall(s, labels, predictions, options));
        throw InvalidArgument("no metric named '", kind, "'");
      },
      py::arg("graph"), py::arg("prefix"), py::arg("kind"), py::arg("labels"),
      py::arg("predictions"), py::arg("weights"), py::arg("name"));
  m.def(
      "metric_mean",
      [](Graph& g, const std::string& prefix, Output values, std::optional<Output> weights,
         std::string name) {
        return FromMetric(
            metrics::Mean(MakeScope(g, prefix), values, ToMetricOptions(weights, std::move(name))));
      },
      py::arg("graph"), py::arg("prefix"), py::arg("values"), py::arg("weights"), py::arg("name"));
  m.def(
      "metric_auc",
      [](Graph& g, const std::string& prefix, Output labels, Output predictions,
         std::optional<Output> weights, int64_t num_thresholds, const std::string& curve,
         std::string name) {
        metrics::AucOptions options{
            .num_thresholds = num_thresholds,
            .curve = curve == "PR" ? metrics::Curve::kPR : metrics::Curve::kROC,
            .name = std::move(name)};
        if (weights) options.weights = *weights;
        return FromMetric(metrics::AUC(MakeScope(g, prefix), labels, predictions, options));
      },
      py::arg("graph"), py::arg("prefix"), py::arg("labels"), py::arg("predictions"),
      py::arg("weights"), py::arg("num_thresholds"), py::arg("curve"), py::arg("name"));
  m.def(
      "metric_classes",
      [](Graph& g, const std::string& prefix, const std::string& kind, Output labels,
         Output predictions, int64_t num_classes, std::optional<Output> weights, std::string name) {
        Scope s = MakeScope(g, prefix);
        auto options = ToMetricOptions(weights, std::move(name));
        if (kind == "mean_per_class_accuracy") {
          return FromMetric(
              metrics::MeanPerClassAccuracy(s, labels, predictions, num_classes, options));
        }
        if (kind == "mean_iou") {
          return FromMetric(metrics::MeanIoU(s, labels, predictions, num_classes, options));
        }
        throw InvalidArgument("no metric named '", kind, "'");
      },
      py::arg("graph"), py::arg("prefix"), py::arg("kind"), py::arg("labels"),
      py::arg("predictions"), py::arg("num_classes"), py::arg("weights"), py::arg("name"));
}

void BindFeatureColumns(py::module_& m) {
  py::class_<ColumnHandle>(m, "FeatureColumn")
      .def_property_readonly("name", [](const ColumnHandle& h) { return h.any->name(); })
      .def_property_readonly("is_dense", [](const ColumnHandle& h) { return h.dense != nullptr; })
      .def_property_readonly("is_categorical",
                             [](const ColumnHandle& h) { return h.categorical != nullptr; });
  m.def(
      "numeric_column",
      [](const std::string& key, const py::object& shape) {
        return Handle(fc::NumericColumn(key, {.shape = ToShape(shape)}));
      },
      py::arg("key"), py::arg("shape"));
  m.def(
      "bucketized_column",
      [](const ColumnHandle& source, std::vector<double> boundaries) {
        if (source.dense == nullptr) {
          throw InvalidArgument("bucketized_column: source_column must be a numeric_column");
        }
        return Handle(fc::BucketizedColumn(source.dense, boundaries));
      },
      py::arg("source_column"), py::arg("boundaries"));
  m.def(
      "indicator_column",
      [](const ColumnHandle& categorical) {
        return Handle(fc::IndicatorColumn(Categorical(categorical, "indicator_column")));
      },
      py::arg("categorical_column"));
  m.def(
      "embedding_column",
      [](const ColumnHandle& categorical, int64_t dimension, const std::string& combiner,
         const py::object& initializer, bool trainable) {
        return Handle(fc::EmbeddingColumn(Categorical(categorical, "embedding_column"),
                                          {.dimension = dimension,
                                           .combiner = ToCombiner(combiner),
                                           .initializer = ToInitializer(initializer),
                                           .trainable = trainable}));
      },
      py::arg("categorical_column"), py::arg("dimension"), py::arg("combiner"),
      py::arg("initializer"), py::arg("trainable"));
  m.def(
      "categorical_column_with_vocabulary_list",
      [](const std::string& key, const py::list& vocabulary, int64_t default_value,
         int64_t num_oov_buckets) {
        fc::VocabularyOptions options{.default_value = default_value,
                                      .num_oov_buckets = num_oov_buckets};
        if (!vocabulary.empty() && py::isinstance<py::int_>(vocabulary[0])) {
          return Handle(fc::CategoricalColumnWithVocabularyList(
              key, vocabulary.cast<std::vector<int64_t>>(), options));
        }
        return Handle(fc::CategoricalColumnWithVocabularyList(
            key, vocabulary.cast<std::vector<std::string>>(), options));
      },
      py::arg("key"), py::arg("vocabulary_list"), py::arg("default_value"),
      py::arg("num_oov_buckets"));
  m.def(
      "categorical_column_with_vocabulary_file",
      [](const std::string& key, const std::string& path, int64_t vocabulary_size,
         int64_t default_value, int64_t num_oov_buckets, const py::object& dtype) {
        return Handle(fc::CategoricalColumnWithVocabularyFile(
            key, path,
            {.vocabulary_size = vocabulary_size,
             .default_value = default_value,
             .num_oov_buckets = num_oov_buckets,
             .dtype = dtype.is_none() ? kString : ToDType(dtype)}));
      },
      py::arg("key"), py::arg("vocabulary_file"), py::arg("vocabulary_size"),
      py::arg("default_value"), py::arg("num_oov_buckets"), py::arg("dtype"));
  m.def(
      "categorical_column_with_hash_bucket",
      [](const std::string& key, int64_t hash_bucket_size, const py::object& dtype) {
        return Handle(fc::CategoricalColumnWithHashBucket(
            key, hash_bucket_size, dtype.is_none() ? kString : ToDType(dtype)));
      },
      py::arg("key"), py::arg("hash_bucket_size"), py::arg("dtype"));
  m.def(
      "categorical_column_with_identity",
      [](const std::string& key, int64_t num_buckets, py::object default_value) {
        return Handle(
            fc::CategoricalColumnWithIdentity(key, num_buckets, OptionalInt(default_value)));
      },
      py::arg("key"), py::arg("num_buckets"), py::arg("default_value"));
  m.def(
      "crossed_column",
      [](const py::list& keys, int64_t hash_bucket_size) {
        std::vector<fc::CrossKey> cross;
        for (py::handle key : keys) {
          if (py::isinstance<py::str>(key)) {
            cross.emplace_back(key.cast<std::string>());
          } else {
            cross.emplace_back(Categorical(key.cast<const ColumnHandle&>(), "crossed_column"));
          }
        }
        return Handle(fc::CrossedColumn(cross, hash_bucket_size));
      },
      py::arg("keys"), py::arg("hash_bucket_size"));
  m.def(
      "weighted_categorical_column",
      [](const ColumnHandle& categorical, const std::string& weight_feature_key) {
        return Handle(fc::WeightedCategoricalColumn(
            Categorical(categorical, "weighted_categorical_column"), weight_feature_key));
      },
      py::arg("categorical_column"), py::arg("weight_feature_key"));
  m.def(
      "input_layer",
      [](Graph& g, const std::string& prefix, std::map<std::string, Output> features,
         const std::vector<ColumnHandle>& columns) {
        return fc::InputLayer(MakeScope(g, prefix), ToFeatures(std::move(features)),
                              DenseColumns(columns, "input_layer"));
      },
      py::arg("graph"), py::arg("prefix"), py::arg("features"), py::arg("feature_columns"));
  m.def(
      "linear_model",
      [](Graph& g, const std::string& prefix, std::map<std::string, Output> features,
         const std::vector<ColumnHandle>& columns, int64_t units, const std::string& combiner) {
        return fc::LinearModel(MakeScope(g, prefix), ToFeatures(std::move(features)),
                               AnyColumns(columns),
                               {.units = units, .sparse_combiner = ToCombiner(combiner)});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("features"), py::arg("feature_columns"),
      py::arg("units"), py::arg("sparse_combiner"));
  // tf.nn.embedding_lookup_sparse over (indices, values, dense_shape) triples.
  m.def(
      "embedding_lookup_sparse",
      [](Graph& g, const std::string& prefix, Output params, std::vector<Output> ids,
         std::optional<std::vector<Output>> weights, const std::string& combiner) {
        auto sparse = [](const std::vector<Output>& t) {
          if (t.size() != 3) throw InvalidArgument("a SparseTensor is 3 tensors, got ", t.size());
          return SparseTensor{t[0], t[1], t[2]};
        };
        std::optional<SparseTensor> w;
        if (weights) w = sparse(*weights);
        fc::Combiner c = ToCombiner(combiner);
        SparseCombiner how = c == fc::Combiner::kSum    ? SparseCombiner::kSum
                             : c == fc::Combiner::kMean ? SparseCombiner::kMean
                                                        : SparseCombiner::kSqrtN;
        return EmbeddingLookupSparse(MakeScope(g, prefix), params, sparse(ids), w,
                                     {.combiner = how});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("params"), py::arg("sp_ids"),
      py::arg("sp_weights"), py::arg("combiner"));
}

}  // namespace

std::vector<fc::DenseColumnPtr> DenseColumns(const std::vector<ColumnHandle>& columns,
                                             const char* who) {
  std::vector<fc::DenseColumnPtr> dense;
  for (const ColumnHandle& h : columns) {
    if (h.dense == nullptr) {
      throw InvalidArgument(who, ": feature column '", h.any->name(),
                            "' is categorical; wrap it in indicator_column or embedding_column");
    }
    dense.push_back(h.dense);
  }
  return dense;
}

std::vector<fc::FeatureColumnPtr> AnyColumns(const std::vector<ColumnHandle>& columns) {
  std::vector<fc::FeatureColumnPtr> any;
  for (const ColumnHandle& h : columns) any.push_back(h.any);
  return any;
}

void BindModelParts(py::module_& m) {
  BindLayers(m);
  BindConvLayers(m);
  BindLosses(m);
  BindMetrics(m);
  BindFeatureColumns(m);
}

}  // namespace loom::python
