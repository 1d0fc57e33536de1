// Reading a job file (job.h): the TOML tables into a Job, every error naming the file,
// line and key. Building the estimator and inputs a Job describes is job_build.cc's.
#include "loom/cli/job.h"

#include <set>
#include <string>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/base/strcat.h"
#include "loom/cli/schedule.h"
#include "loom/cli/toml_table.h"

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
            ParseRecordFeature(*v.as_table(), StrCat(name, ".features.", fname), path);
      }
    }
  } else {
    table.Fail("format", "expected \"idx\", \"npy\", \"csv\" or \"tfrecord\"");
  }
  table.CheckAllUsed();
  return s;
}

// OptimizerSpec's names (loom/estimator/canned.h).
const std::set<std::string> kOptimizerNames = {"Adagrad", "Adam", "Ftrl",
                                               "RMSProp", "SGD",  "Momentum"};

// Throws InvalidArgument naming `key` when the table has it and `applies` is false: only
// `who` read it, and this job's model is `type`.
void OnlyFor(Table& t, const char* key, bool applies, const char* who, const std::string& type) {
  if (applies || t.Get(key) == nullptr) return;
  t.Fail(key, StrCat("only ", who, " take it, and this job's [model] type is '", type,
                     "', which would ignore it; remove it or change the type"));
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
    // A key of another model type is an error, not silently unused (TF's canned
    // estimators reject it as an unexpected keyword argument).
    const bool dnn = job.model_type.starts_with("dnn");
    const bool linear = job.model_type.find("linear") != std::string::npos;
    OnlyFor(t, "hidden_units", dnn, "the DNN models (dnn_*)", job.model_type);
    OnlyFor(t, "dropout", dnn, "the DNN models (dnn_*)", job.model_type);
    OnlyFor(t, "batch_norm", dnn, "the DNN models (dnn_*)", job.model_type);
    OnlyFor(t, "dnn_features", dnn, "the DNN models (dnn_*)", job.model_type);
    OnlyFor(t, "linear_features", linear, "the linear models (linear_*, dnn_linear_*)",
            job.model_type);
    OnlyFor(t, "n_classes", job.is_classifier(), "classifiers (*_classifier)", job.model_type);
    OnlyFor(t, "label_dimension", !job.is_classifier(), "regressors (*_regressor)", job.model_type);
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
    const bool wide_deep = job.model_type.starts_with("dnn_linear");
    OnlyFor(t, "linear_name", wide_deep, "dnn_linear_* models", job.model_type);
    OnlyFor(t, "linear_learning_rate", wide_deep, "dnn_linear_* models", job.model_type);
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
    if (job.steps && *job.steps <= 0) t.Fail("steps", "must be > 0 (leave it out for one pass)");
    if (job.max_steps && *job.max_steps <= 0) t.Fail("max_steps", "must be > 0");
    if (job.batch_size <= 0) t.Fail("batch_size", "must be > 0");
    if (job.shuffle_buffer <= 0) {
      t.Fail("shuffle_buffer", "must be > 0 (1 keeps the input's order)");
    }
    t.CheckAllUsed();
  }
  if (const toml::table* ev = top.SubTable("eval")) {
    Table t(*ev, "eval", path);
    job.eval_steps = t.Int("steps");
    if (job.eval_steps && *job.eval_steps <= 0) {
      t.Fail("steps", "must be > 0 (leave it out to evaluate the whole eval source)");
    }
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

}  // namespace loom::cli
