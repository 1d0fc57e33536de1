#include "loom/cli/job.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "loom/base/error.h"
#include "loom/base/strcat.h"
#include "loom/cli/schedule.h"
#include "loom/cli/toml_table.h"
#include "loom/data/file_sources.h"
#include "loom/estimator/canned.h"
#include "loom/ops/math.h"

namespace loom::cli {
namespace fc = feature_column;

namespace {

const std::set<std::string> kModelTypes = {"linear_classifier",     "linear_regressor",
                                           "dnn_classifier",        "dnn_regressor",
                                           "dnn_linear_classifier", "dnn_linear_regressor"};

// Data paths in a job are relative to the job file's directory.
std::string Resolve(const std::string& file, const std::string& job_path) {
  if (file.empty() || file[0] == '/') return file;
  std::string dir = Dirname(job_path);
  return dir.empty() || dir == "." ? file : JoinPath(dir, file);
}

// One feature of a tfrecord source: { dtype, shape, default } or { dtype, var_len = true }.
RecordFeature ParseRecordFeature(const toml::table& t, const std::string& name,
                                 const std::string& path) {
  Table ft(t, name, path);
  RecordFeature f;
  std::string dt = ft.String("dtype").value_or("float32");
  if (dt != "int64" && dt != "string" && dt != "float32")
    ft.Fail("dtype", "expected float32, int64 or string");
  f.dtype = dt == "int64" ? kInt64 : dt == "string" ? kString : kFloat32;
  f.var_len = ft.Bool("var_len").value_or(false);
  std::vector<int64_t> dims = ft.Ints("shape");
  for (int64_t d : dims)
    if (d <= 0) ft.Fail("shape", "dimensions must be > 0");
  f.shape = Shape(dims);
  const toml::node* d = ft.Get("default");
  if (f.var_len) {
    if (!dims.empty()) ft.Fail("shape", "a var_len feature has no fixed shape; remove 'shape'");
    if (d != nullptr)
      ft.Fail("default", "a var_len feature has no default (a record without it has no values)");
    if (f.dtype == kFloat32)
      ft.Fail("var_len",
              "var_len features feed categorical columns (identity, vocabulary, hash): "
              "dtype int64 or string; give a float feature a shape and a default");
  }
  if (d != nullptr) {
    // A scalar fills the shape; an array gives every value (row-major).
    std::vector<const toml::node*> values;
    if (d->is_array()) {
      for (const auto& e : *d->as_array()) values.push_back(&e);
      if (static_cast<int64_t>(values.size()) != f.shape.num_elements())
        ft.Fail("default", StrCat("expected one value or ", f.shape.num_elements(),
                                  " (the shape's element count), got ", values.size()));
    } else {
      values.push_back(d);
    }
    Tensor value = Tensor::Zeros(f.dtype, values.size() == 1 ? Shape() : f.shape);
    for (size_t i = 0; i < values.size(); ++i) {
      const toml::node* e = values[i];
      if (f.dtype == kString) {
        if (!e->is_string())
          ft.Fail("default", "expected a string (the feature's dtype is string)");
        value.data<std::string>()[i] = e->as_string()->get();
      } else if (f.dtype == kInt64) {
        if (!e->is_integer())
          ft.Fail("default", "expected an integer (the feature's dtype is int64)");
        value.data<int64_t>()[i] = e->as_integer()->get();
      } else {
        if (!e->is_number())
          ft.Fail("default", "expected a number (the feature's dtype is float32)");
        value.data<float>()[i] =
            static_cast<float>(e->is_integer() ? static_cast<double>(e->as_integer()->get())
                                               : e->as_floating_point()->get());
      }
    }
    f.default_value = std::move(value);
  }
  ft.CheckAllUsed();
  return f;
}

DataSource ParseSource(const toml::table& t, const std::string& name, const std::string& path) {
  Table table(t, name, path);
  DataSource s;
  s.format = table.String("format").value_or("");
  if (s.format == "idx") {
    s.images = table.String("images").value_or("");
    s.labels = table.String("labels").value_or("");
    if (s.images.empty()) table.Fail("images", "an idx source needs 'images'");
    s.images = Resolve(s.images, path);
    if (!s.labels.empty()) s.labels = Resolve(s.labels, path);
  } else if (s.format == "npy") {
    if (const toml::table* arrays = table.SubTable("arrays")) {
      for (const auto& [k, v] : *arrays) {
        if (!v.is_string()) table.Fail("arrays", "values must be file names");
        s.arrays[std::string(k.str())] = Resolve(v.as_string()->get(), path);
      }
    }
    if (s.arrays.empty())
      table.Fail("arrays", "an npy source needs arrays = { x = \"x.npy\", ... }");
  } else if (s.format == "csv" || s.format == "tfrecord") {
    s.files = table.Strings("files");
    if (s.files.empty()) table.Fail("files", "expected one or more file names or globs");
    for (std::string& f : s.files) f = Resolve(f, path);
    s.compression = table.String("compression").value_or("");
    if (s.format == "csv") {
      s.header = table.Bool("header").value_or(false);
      s.columns = table.Strings("columns");
      const toml::node* d = table.Get("defaults");
      if (d == nullptr || !d->is_array())
        table.Fail("defaults", "expected an array, one per column");
      for (const auto& e : *d->as_array()) {
        if (e.is_integer())
          s.defaults.push_back(Tensor::Scalar<int64_t>(e.as_integer()->get()));
        else if (e.is_floating_point())
          s.defaults.push_back(
              Tensor::Scalar<float>(static_cast<float>(e.as_floating_point()->get())));
        else if (e.is_string())
          s.defaults.push_back(Tensor::ScalarString(e.as_string()->get()));
        else
          table.Fail("defaults", "each default is an integer, a float or a string");
      }
      if (s.columns.size() != s.defaults.size())
        table.Fail("defaults", "need exactly one default per entry of 'columns'");
    } else {
      const toml::table* feats = table.SubTable("features");
      if (feats == nullptr)
        table.Fail(
            "features",
            "a tfrecord source needs features = { name = { dtype = \"float32\", shape = [..] } }");
      for (const auto& [k, v] : *feats) {
        if (!v.is_table())
          table.Fail("features", "each feature is a table { dtype, shape, default, var_len }");
        const std::string fname(k.str());
        s.example_features[fname] =
            ParseRecordFeature(*v.as_table(), name + ".features." + fname, path);
      }
    }
  } else {
    table.Fail("format", "expected \"idx\", \"npy\", \"csv\" or \"tfrecord\"");
  }
  table.CheckAllUsed();
  return s;
}

// OptimizerSpec's names (canned.h).
const std::set<std::string> kOptimizerNames = {"Adagrad", "Adam", "Ftrl",
                                               "RMSProp", "SGD",  "Momentum"};

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

}  // namespace

bool Job::is_classifier() const { return model_type.ends_with("classifier"); }

Job ParseJob(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw InvalidArgument(path, ":", e.source().begin.line, ":", e.source().begin.column, ": ",
                          e.description());
  }
  Job job;
  job.path = path;
  job.text = text;
  Table top(root, "", path);

  // [model]
  const toml::table* model = top.SubTable("model");
  if (model == nullptr) {
    top.CheckNotMisspelt("model");
    throw InvalidArgument(path, ": missing the [model] table");
  }
  {
    Table t(*model, "model", path);
    job.model_type = t.String("type").value_or("");
    if (!kModelTypes.count(job.model_type))
      t.Fail("type",
             "expected one of linear_classifier, linear_regressor, dnn_classifier, "
             "dnn_regressor, dnn_linear_classifier, dnn_linear_regressor");
    job.hidden_units = t.Ints("hidden_units");
    if (job.model_type.starts_with("dnn") && job.hidden_units.empty() &&
        job.model_type.find("linear") == std::string::npos)
      t.Fail("hidden_units", "a DNN needs hidden_units, e.g. [256, 128]");
    job.n_classes = t.Int("n_classes").value_or(2);
    job.label_dimension = t.Int("label_dimension").value_or(1);
    job.dropout = t.Double("dropout");
    job.batch_norm = t.Bool("batch_norm").value_or(false);
    job.linear_features = t.Strings("linear_features");
    job.dnn_features = t.Strings("dnn_features");
    t.CheckAllUsed();
  }
  if (const toml::table* opt = top.SubTable("optimizer")) {
    Table t(*opt, "optimizer", path);
    job.optimizer = t.String("name").value_or("");
    job.learning_rate = t.Double("learning_rate");
    job.linear_optimizer = t.String("linear_name").value_or("");
    job.linear_learning_rate = t.Double("linear_learning_rate");
    for (const char* key : {"name", "linear_name"}) {
      const std::string& name = std::string(key) == "name" ? job.optimizer : job.linear_optimizer;
      if (!name.empty() && !kOptimizerNames.count(name))
        t.Fail(key, "expected Adagrad, Adam, Ftrl, RMSProp, SGD or Momentum");
    }
    if (const toml::table* s = t.SubTable("schedule"))
      job.schedule = ParseSchedule(*s, "optimizer.schedule", path);
    if (const toml::table* s = t.SubTable("linear_schedule")) {
      if (!job.model_type.starts_with("dnn_linear"))
        t.Fail("linear_schedule",
               "only dnn_linear_* models have a separate linear optimizer; "
               "use [optimizer.schedule]");
      job.linear_schedule = ParseSchedule(*s, "optimizer.linear_schedule", path);
    }
    // A schedule decays the optimizer's learning_rate (piecewise_constant has its own
    // values), so both are given rather than taken from the estimator's defaults.
    auto check = [&](const std::optional<ScheduleSpec>& schedule, const char* schedule_key,
                     const std::string& name, const char* name_key,
                     const std::optional<double>& rate, const char* rate_key) {
      if (!schedule) return;
      if (name.empty())
        t.Fail(schedule_key, StrCat("a schedule needs the optimizer's '", name_key, "'"));
      if (schedule->type == "piecewise_constant" && rate)
        t.Fail(rate_key,
               "piecewise_constant takes its rates from the schedule's 'values'; remove it");
      if (schedule->type != "piecewise_constant" && !rate)
        t.Fail(schedule_key, StrCat("the schedule decays '", rate_key, "'; set it"));
    };
    check(job.schedule, "schedule", job.optimizer, "name", job.learning_rate, "learning_rate");
    check(job.linear_schedule, "linear_schedule", job.linear_optimizer, "linear_name",
          job.linear_learning_rate, "linear_learning_rate");
    t.CheckAllUsed();
  }
  if (const toml::table* rc = top.SubTable("run_config")) {
    Table t(*rc, "run_config", path);
    RunConfig& c = job.run_config;
    c.model_dir = t.String("model_dir").value_or("");
    if (auto v = t.Int("tf_random_seed")) c.tf_random_seed = *v;
    c.save_summary_steps = t.Int("save_summary_steps").value_or(c.save_summary_steps);
    if (auto v = t.Int("save_checkpoints_steps")) c.save_checkpoints_steps = *v;
    if (auto v = t.Double("save_checkpoints_secs")) c.save_checkpoints_secs = *v;
    c.keep_checkpoint_max =
        static_cast<int>(t.Int("keep_checkpoint_max").value_or(c.keep_checkpoint_max));
    c.log_step_count_steps = t.Int("log_step_count_steps").value_or(c.log_step_count_steps);
    t.CheckAllUsed();
  }
  if (job.run_config.model_dir.empty()) {
    top.CheckNotMisspelt("run_config");
    throw InvalidArgument(path, ": [run_config] key 'model_dir' is required");
  }
  if (const toml::table* tr = top.SubTable("train")) {
    Table t(*tr, "train", path);
    job.steps = t.Int("steps");
    job.max_steps = t.Int("max_steps");
    job.batch_size = t.Int("batch_size").value_or(job.batch_size);
    job.shuffle_buffer = t.Int("shuffle_buffer").value_or(job.shuffle_buffer);
    if (auto v = t.Int("seed")) job.seed = static_cast<uint64_t>(*v);
    if (auto v = t.String("precision")) {
      job.run_config.precision = ParsePrecision(*v, StrCat(path, ": [train] precision"));
    }
    if (job.steps && job.max_steps) t.Fail("steps", "give steps or max_steps, not both");
    if (job.batch_size <= 0) t.Fail("batch_size", "must be > 0");
    t.CheckAllUsed();
  }
  if (const toml::table* ev = top.SubTable("eval")) {
    Table t(*ev, "eval", path);
    job.eval_steps = t.Int("steps");
    t.CheckAllUsed();
  }
  if (const toml::table* ex = top.SubTable("export")) {
    Table t(*ex, "export", path);
    job.export_dir = t.String("dir").value_or("");
    t.CheckAllUsed();
  }
  if (const toml::table* d = top.SubTable("data")) {
    Table t(*d, "data", path);
    job.label_key = t.String("label_key").value_or("label");
    for (const char* split : {"train", "eval", "predict"}) {
      if (const toml::table* s = t.SubTable(split))
        job.data[split] = ParseSource(*s, std::string("data.") + split, path);
    }
    t.CheckAllUsed();
  }
  if (const toml::node* feats = top.Get("features")) {
    if (!feats->is_array_of_tables())
      throw InvalidArgument(top.Where(feats), ": 'features' must be [[features]] tables");
    for (const auto& f : *feats->as_array()) {
      Table t(*f.as_table(), "features", path);
      FeatureSpec spec;
      spec.name = t.String("name").value_or("");
      if (spec.name.empty()) t.Fail("name", "every feature needs a name");
      spec.type = t.String("type").value_or("numeric");
      std::vector<int64_t> shape = t.Ints("shape");
      if (!shape.empty()) spec.shape = shape;
      spec.scale = t.Double("scale").value_or(1.0);
      spec.shift = t.Double("shift").value_or(0.0);
      spec.boundaries = t.Doubles("boundaries");
      spec.num_buckets = t.Int("num_buckets").value_or(0);
      spec.vocabulary = t.Strings("vocabulary");
      spec.embedding_dimension = t.Int("embedding_dimension").value_or(0);
      static const std::set<std::string> kTypes = {"numeric", "bucketized", "identity",
                                                   "vocabulary", "hash"};
      if (!kTypes.count(spec.type))
        t.Fail("type", "expected numeric, bucketized, identity, vocabulary or hash");
      if ((spec.type == "identity" || spec.type == "hash") && spec.num_buckets <= 0)
        t.Fail("num_buckets", "needs num_buckets > 0");
      if (spec.type == "vocabulary" && spec.vocabulary.empty())
        t.Fail("vocabulary", "needs a non-empty vocabulary");
      if (spec.type == "bucketized" && spec.boundaries.empty())
        t.Fail("boundaries", "needs boundaries");
      t.CheckAllUsed();
      job.features.push_back(std::move(spec));
    }
  }
  if (job.features.empty())
    throw InvalidArgument(path, ": the job needs at least one [[features]]");
  // A var_len record feature is padded to each batch's longest row: only categorical
  // columns, which read the padding as absent, take it.
  for (const FeatureSpec& f : job.features) {
    if (f.type != "numeric" && f.type != "bucketized") continue;
    for (const auto& [split, source] : job.data) {
      auto rf = source.example_features.find(f.name);
      if (rf != source.example_features.end() && rf->second.var_len) {
        throw InvalidArgument(path, ": [[features]] '", f.name, "' is a ", f.type,
                              " column, but [data.", split, "] reads it with var_len = true; ",
                              "use an identity, vocabulary or hash column, or give the feature ",
                              "a shape and a default");
      }
    }
  }
  top.CheckAllUsed();
  return job;
}

Job LoadJob(const std::string& path) {
  Env* env = Env::Default();
  if (!env->FileExists(path)) throw NotFound("job file '", path, "' does not exist");
  return ParseJob(ReadFileToString(env, path), path);
}

namespace {

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
