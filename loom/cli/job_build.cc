// Building what a parsed job (job.h) describes: its Estimator, the input functions over
// its data sources and the serving input function. Reading the job file is job.cc's.
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "loom/base/error.h"
#include "loom/base/strcat.h"
#include "loom/cli/job.h"
#include "loom/cli/schedule.h"
#include "loom/data/file_sources.h"
#include "loom/estimator/canned.h"
#include "loom/ops/math.h"

namespace loom::cli {
namespace fc = feature_column;

namespace {

// Casts the labels of a batch to what the head wants: int64 class ids or float32 values.
// A float label of a classifier must be a whole number (1.0 is class 1): 0.7, NaN or 1e30
// would otherwise become some class id silently.
Tensor CastLabels(const Tensor& t, bool classifier, const std::string& label_key,
                  const std::string& split) {
  DType want = classifier ? kInt64 : kFloat32;
  if (t.dtype() == want || t.dtype() == kString) return t;
  Tensor out = Tensor::Zeros(want, t.shape());
  auto class_id = [&](double v, int64_t i) -> int64_t {
    // 2^53: past it not every integer is a double, and no model has that many classes.
    if (!(std::abs(v) <= 9007199254740992.0) || v != std::floor(v)) {
      throw InvalidArgument("label '", label_key, "' = ", v, " (example ", i,
                            " of a batch of [data.", split, "]) is not a class id: a ",
                            "classifier's labels are whole numbers 0 .. n_classes - 1. Fix ",
                            "the data, or train a regressor for real-valued labels");
    }
    return static_cast<int64_t>(v);
  };
  auto convert = [&](auto* dst) {
    using D = std::remove_pointer_t<decltype(dst)>;
    int64_t n = t.NumElements();
    switch (t.dtype()) {
      case kUInt8:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(t.data<uint8_t>()[i]);
        break;
      case kInt32:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(t.data<int32_t>()[i]);
        break;
      case kInt64:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(t.data<int64_t>()[i]);
        break;
      case kFloat32:
        for (int64_t i = 0; i < n; ++i) {
          const float v = t.data<float>()[i];
          dst[i] = classifier ? static_cast<D>(class_id(v, i)) : static_cast<D>(v);
        }
        break;
      case kFloat64:
        for (int64_t i = 0; i < n; ++i) {
          const double v = t.data<double>()[i];
          dst[i] = classifier ? static_cast<D>(class_id(v, i)) : static_cast<D>(v);
        }
        break;
      default:
        throw InvalidArgument("label '", label_key, "' of [data.", split, "] has dtype ",
                              DTypeName(t.dtype()), ", which is not supported as labels");
    }
  };
  if (classifier)
    convert(out.data<int64_t>());
  else
    convert(out.data<float>());
  return out;
}

// The ExampleSpec of a tfrecord source.
ExampleSpec RecordSpec(const DataSource& s) {
  ExampleSpec spec;
  for (const auto& [name, f] : s.example_features) {
    if (f.var_len) {
      spec.var_len[name] = {.dtype = f.dtype,
                            .output = VarLenOutput::kPadded,
                            .padding_value = f.dtype == kString ? Tensor::ScalarString("")
                                                                : Tensor::Scalar<int64_t>(-1)};
    } else {
      spec.fixed[name] = {.dtype = f.dtype, .shape = f.shape, .default_value = f.default_value};
    }
  }
  return spec;
}

// The component of a tfrecord source's elements naming each record for parse errors.
constexpr const char* kOriginKey = "__record_origin";

data::Dataset SourceDataset(const DataSource& s) {
  if (s.format == "idx") {
    return s.labels.empty() ? data::FromIdx(s.images) : data::FromIdx(s.images, s.labels);
  }
  if (s.format == "npy") return data::FromNpy(s.arrays);
  if (s.format == "csv") {
    return data::CsvDataset(
        s.files, s.defaults,
        {.header = s.header, .column_names = s.columns, .file = {.compression = s.compression}});
  }
  return data::TFRecordDataset(s.files, {.compression = s.compression, .origin_key = kOriginKey});
}

// The spec of one example of `s` (unbatched, after parsing records).
data::ElementSpec OneExampleSpec(const DataSource& s) {
  if (s.format != "tfrecord") return SourceDataset(s).spec();
  return data::ParsedExamplesSpec(SourceDataset(s).spec(), RecordSpec(s), data::kRecordKey,
                                  kOriginKey);
}

// Throws InvalidArgument when `label_key` names no component of data.<split>.
void CheckLabelKey(const Job& job, const std::string& split, const data::ElementSpec& spec) {
  if (spec.count(job.label_key)) return;
  std::string names;
  for (const auto& [name, ts] : spec) names += (names.empty() ? "" : ", ") + name;
  throw InvalidArgument(job.path, ": [data] label_key = \"", job.label_key,
                        "\" names no component of [data.", split, "], whose components are ", names,
                        "; set label_key to the one that holds the labels");
}

// The input pipeline holds up to this many batches at once: two prefetched, one being
// assembled and one in the training step.
constexpr int64_t kBatchesInFlight = 4;

// Throws ResourceExhausted when batch_size examples of data.<split> cannot fit in this
// machine's memory, before anything is allocated (otherwise the pipeline dies of
// std::bad_alloc, or the machine swaps).
void CheckBatchFits(const Job& job, const std::string& split, const data::ElementSpec& spec) {
  int64_t example_bytes = 0;
  std::string parts;
  for (const auto& [name, ts] : spec) {
    int64_t elements = 1;
    for (int64_t d : ts.shape.dims()) elements *= std::max<int64_t>(d, 1);
    const int64_t bytes = elements * static_cast<int64_t>(DTypeSize(ts.dtype));
    example_bytes += bytes;
    parts += StrCat(parts.empty() ? "" : ", ", name, ": ", bytes);
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0 || example_bytes == 0) return;
  const long double memory = static_cast<long double>(pages) * page_size;
  const long double batch_bytes = static_cast<long double>(job.batch_size) * example_bytes;
  if (batch_bytes * kBatchesInFlight <= memory) return;
  throw ResourceExhausted(
      job.path, ": [train] batch_size = ", job.batch_size,
      " does not fit in memory: one batch of [data.", split, "] is ",
      static_cast<uint64_t>(batch_bytes), " bytes (", example_bytes, " bytes per example: ", parts,
      "), the input pipeline holds up to ", kBatchesInFlight, " batches, and this machine has ",
      static_cast<uint64_t>(memory), " bytes of memory; lower batch_size to at most ",
      static_cast<int64_t>(memory / (kBatchesInFlight * example_bytes)));
}

fc::DenseColumnPtr Numeric(const FeatureSpec& f) {
  fc::NumericOptions options{.shape = Shape(f.shape)};
  if (f.scale != 1.0 || f.shift != 0.0) {
    float scale = static_cast<float>(f.scale), shift = static_cast<float>(f.shift);
    options.normalizer_fn = [scale, shift](const Scope& s, Output x) {
      if (shift != 0.0f) x = Add(s, x, shift);
      return Mul(s, x, scale);
    };
  }
  return fc::NumericColumn(f.name, options);
}

fc::CategoricalColumnPtr Categorical(const FeatureSpec& f) {
  if (f.type == "bucketized") return fc::BucketizedColumn(Numeric(f), f.boundaries);
  if (f.type == "identity") return fc::CategoricalColumnWithIdentity(f.name, f.num_buckets);
  if (f.type == "vocabulary") return fc::CategoricalColumnWithVocabularyList(f.name, f.vocabulary);
  return fc::CategoricalColumnWithHashBucket(f.name, f.num_buckets);
}

// A column for a linear model: numeric columns as they are, categorical ones as ids.
fc::FeatureColumnPtr LinearColumn(const FeatureSpec& f) {
  if (f.type == "numeric") return Numeric(f);
  return Categorical(f);
}

// A column for a DNN: categorical ones embedded or one-hot.
fc::DenseColumnPtr DenseColumn(const FeatureSpec& f) {
  if (f.type == "numeric") return Numeric(f);
  if (f.embedding_dimension > 0)
    return fc::EmbeddingColumn(Categorical(f), {.dimension = f.embedding_dimension});
  return fc::IndicatorColumn(Categorical(f));
}

bool Wanted(const std::vector<std::string>& names, const FeatureSpec& f) {
  return names.empty() || std::find(names.begin(), names.end(), f.name) != names.end();
}

// REQUIRES: a schedule comes with a name (checked by ParseJob).
OptimizerSpec Optimizer(const std::string& name, std::optional<double> lr,
                        const std::optional<ScheduleSpec>& schedule, const std::string& tag) {
  if (schedule) return OptimizerSpec(name, ScheduleLearningRate(*schedule, lr.value_or(0.0), tag));
  if (name.empty()) return OptimizerSpec();
  if (lr) return OptimizerSpec(name, *lr);
  return OptimizerSpec(name);
}

}  // namespace

std::unique_ptr<Estimator> MakeEstimator(const Job& job) {
  std::vector<fc::FeatureColumnPtr> linear;
  std::vector<fc::DenseColumnPtr> dense;
  for (const FeatureSpec& f : job.features) {
    if (Wanted(job.linear_features, f)) linear.push_back(LinearColumn(f));
    if (Wanted(job.dnn_features, f)) dense.push_back(DenseColumn(f));
  }
  OptimizerSpec opt = Optimizer(job.optimizer, job.learning_rate, job.schedule, "learning_rate");
  const RunConfig& rc = job.run_config;
  const std::string& t = job.model_type;
  if (t == "linear_classifier")
    return std::make_unique<LinearClassifier>(
        LinearClassifierOptions{
            .feature_columns = linear, .n_classes = job.n_classes, .optimizer = opt},
        rc);
  if (t == "linear_regressor")
    return std::make_unique<LinearRegressor>(
        LinearRegressorOptions{
            .feature_columns = linear, .label_dimension = job.label_dimension, .optimizer = opt},
        rc);
  if (t == "dnn_classifier")
    return std::make_unique<DNNClassifier>(DNNClassifierOptions{.hidden_units = job.hidden_units,
                                                                .feature_columns = dense,
                                                                .n_classes = job.n_classes,
                                                                .optimizer = opt,
                                                                .dropout = job.dropout,
                                                                .batch_norm = job.batch_norm},
                                           rc);
  if (t == "dnn_regressor")
    return std::make_unique<DNNRegressor>(
        DNNRegressorOptions{.hidden_units = job.hidden_units,
                            .feature_columns = dense,
                            .label_dimension = job.label_dimension,
                            .optimizer = opt,
                            .dropout = job.dropout,
                            .batch_norm = job.batch_norm},
        rc);
  OptimizerSpec linear_opt = Optimizer(job.linear_optimizer, job.linear_learning_rate,
                                       job.linear_schedule, "linear_learning_rate");
  if (t == "dnn_linear_classifier")
    return std::make_unique<DNNLinearCombinedClassifier>(
        DNNLinearCombinedClassifierOptions{.linear_feature_columns = linear,
                                           .linear_optimizer = linear_opt,
                                           .dnn_feature_columns = dense,
                                           .dnn_optimizer = opt,
                                           .dnn_hidden_units = job.hidden_units,
                                           .dnn_dropout = job.dropout,
                                           .batch_norm = job.batch_norm,
                                           .n_classes = job.n_classes},
        rc);
  return std::make_unique<DNNLinearCombinedRegressor>(
      DNNLinearCombinedRegressorOptions{.linear_feature_columns = linear,
                                        .linear_optimizer = linear_opt,
                                        .dnn_feature_columns = dense,
                                        .dnn_optimizer = opt,
                                        .dnn_hidden_units = job.hidden_units,
                                        .dnn_dropout = job.dropout,
                                        .batch_norm = job.batch_norm,
                                        .label_dimension = job.label_dimension},
      rc);
}

InputFn MakeInputFn(const Job& job, const std::string& split, bool training, bool needs_labels) {
  auto it = job.data.find(split);
  if (it == job.data.end()) {
    throw InvalidArgument(job.path, ": the job has no [data.", split, "] source");
  }
  DataSource source = it->second;
  {
    const data::ElementSpec example = OneExampleSpec(source);
    if (needs_labels) CheckLabelKey(job, split, example);
    CheckBatchFits(job, split, example);
  }
  bool classifier = job.is_classifier();
  std::string label_key = job.label_key;
  int64_t batch = job.batch_size, buffer = job.shuffle_buffer;
  std::optional<uint64_t> seed = job.seed;
  // Without steps or max_steps, training makes one pass over the data.
  bool repeat = training && (job.steps || job.max_steps);
  return [=](Scope&) -> InputFnResult {
    data::Dataset ds = SourceDataset(source);
    if (training) ds = ds.Shuffle(buffer, {.seed = seed});
    if (repeat) ds = ds.Repeat();
    ds = ds.Batch(batch);
    if (source.format == "tfrecord")
      ds = data::ParseExamples(ds, RecordSpec(source), {.origin_key = kOriginKey});
    data::ElementSpec spec = ds.spec();
    if (auto l = spec.find(label_key); l != spec.end() && l->second.dtype != kString) {
      l->second.dtype = classifier ? kInt64 : kFloat32;
      ds = ds.Map(
          [label_key, classifier, split](data::Element e) {
            auto l = e.find(label_key);
            if (l != e.end()) l->second = CastLabels(l->second, classifier, label_key, split);
            return e;
          },
          {.output_spec = spec});
    }
    ds = ds.Prefetch(2);
    std::optional<std::string> key;
    if (ds.spec().count(label_key))
      key = label_key;
    else
      key = std::string();
    return InputFnResult(ds, key);
  };
}

ServingInputReceiverFn MakeServingInputFn(const Job& job) {
  std::map<std::string, data::TensorSpec> features;
  auto it = job.data.find("predict");
  if (it == job.data.end()) it = job.data.find("eval");
  if (it == job.data.end()) it = job.data.find("train");
  if (it == job.data.end()) throw InvalidArgument(job.path, ": the job has no [data] source");
  data::Dataset ds = SourceDataset(it->second);
  if (it->second.format == "tfrecord")
    ds = data::ParseExamples(ds, RecordSpec(it->second), {.origin_key = kOriginKey});
  for (const auto& [name, spec] : ds.spec()) {
    if (name != job.label_key) features[name] = spec;
  }
  return RawServingInputReceiverFn(features);
}

}  // namespace loom::cli
