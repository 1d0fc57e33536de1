// Dense columns (numeric, bucketized, indicator, embedding), the transform cache, the
// combiners shared with LinearModel, and InputLayer.
#include <algorithm>
#include <cmath>
#include <set>

#include "loom/base/strcat.h"
#include "loom/estimator/feature_column_internal.h"
#include "loom/estimator/feature_column_ops.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"

namespace loom::feature_column {

using internal::Describe;

namespace {
const char* const kSparseParts[] = {"/indices", "/values", "/dense_shape"};
}  // namespace

void AddSparseFeature(Features& features, const std::string& key, const SparseTensor& sp) {
  const Output parts[] = {sp.indices, sp.values, sp.dense_shape};
  if (features.count(key)) {
    throw InvalidArgument("AddSparseFeature: the features already hold a dense '", key, "'");
  }
  for (int i = 0; i < 3; ++i) {
    if (!features.emplace(key + kSparseParts[i], parts[i]).second) {
      throw InvalidArgument("AddSparseFeature: the features already hold '", key, kSparseParts[i],
                            "'; feature '", key, "' is given twice");
    }
  }
}

std::optional<SparseTensor> FindSparseFeature(const Features& features, const std::string& key) {
  Output parts[3];
  for (int i = 0; i < 3; ++i) {
    auto it = features.find(key + kSparseParts[i]);
    if (it == features.end()) return std::nullopt;
    parts[i] = it->second;
  }
  return SparseTensor{parts[0], parts[1], parts[2]};
}

std::optional<SparseTensor> TransformCache::SparseFeature(const std::string& key) const {
  return features_.count(key) ? std::nullopt : FindSparseFeature(features_, key);
}

Output TransformCache::Feature(const std::string& key, const std::string& column) const {
  auto it = features_.find(key);
  if (it != features_.end()) return it->second;
  if (SparseFeature(key)) {
    throw InvalidArgument("feature column '", column, "': feature '", key,
                          "' is a SparseTensor (a VarLenFeature) but the column takes a dense "
                          "tensor; parse it as a FixedLenFeature, densify it with "
                          "tf.sparse.to_dense, or use a categorical column");
  }
  std::vector<std::string> present;
  for (const auto& [name, output] : features_) present.push_back("'" + name + "'");
  throw InvalidArgument("feature column '", column, "': no feature named '", key,
                        "' in the input (features present: ",
                        present.empty() ? std::string("none") : StrJoin(present, ", "),
                        "); the input function must provide it");
}

CategoricalIds TransformCache::Ids(const CategoricalColumn& column) {
  auto it = ids_.find(&column);
  if (it != ids_.end()) return it->second;
  CategoricalIds ids = column.TransformIds(*this);
  ids_.emplace(&column, ids);
  return ids;
}

namespace internal {

std::string Describe(const std::string& kind, const std::string& column, const std::string& key) {
  return StrCat(kind, " column '", column, "' (feature '", key, "')");
}

Output AsIdMatrix(const Scope& scope, Output x, const std::string& what) {
  const Shape& s = x.shape();
  if (!s.rank_known()) return Reshape(scope, x, std::vector<int64_t>{-1, 1});
  if (s.rank() == 1) return ExpandDims(scope, x, 1);
  if (s.rank() == 2) return x;
  throw InvalidArgument(what, ": categorical features must be [batch] or [batch, k], got shape ",
                        s);
}

Output PresentWeights(const Scope& scope, const CategoricalIds& ids) {
  Output present = Cast(scope, GreaterEqual(scope, ids.ids, int64_t{0}), kFloat32);
  return ids.weights.valid() ? Mul(scope, ids.weights, present) : present;
}

namespace {
// d with every zero replaced by one, so d is a safe divisor where the numerator is 0.
Output NonZero(const Scope& scope, Output d) {
  return Add(scope, d, Cast(scope, Equal(scope, d, 0.0f), kFloat32));
}
}  // namespace

Output CombineRows(const Scope& scope, Output table, const CategoricalIds& ids, Combiner combiner) {
  Output w = PresentWeights(scope, ids);                  // [batch, k]
  Output safe_ids = Maximum(scope, ids.ids, int64_t{0});  // absent -> row 0, weight 0
  Output rows = Gather(scope, table, safe_ids);           // [batch, k, d]
  Output sum = Sum(scope, Mul(scope, rows, ExpandDims(scope, w, -1)), {1});  // [batch, d]
  switch (combiner) {
    case Combiner::kSum:
      return sum;
    case Combiner::kMean:
      return Div(scope, sum, NonZero(scope, Sum(scope, w, {1}, {.keep_dims = true})));
    case Combiner::kSqrtN:
      return Div(
          scope, sum,
          Sqrt(scope, NonZero(scope, Sum(scope, Square(scope, w), {1}, {.keep_dims = true}))));
  }
  return sum;
}

}  // namespace internal

namespace {

// ---- numeric -------------------------------------------------------------------------------

class NumericColumnImpl : public internal::NumericColumnBase {
 public:
  NumericColumnImpl(std::string key, NumericOptions options)
      : key_(std::move(key)), options_(std::move(options)) {
    if (!options_.shape.fully_defined() || options_.shape.num_elements() <= 0) {
      throw InvalidArgument("numeric column '", key_,
                            "': shape must be fully defined and "
                            "non-empty, got ",
                            options_.shape);
    }
  }
  std::string name() const override { return key_; }
  int64_t dimension() const override { return options_.shape.num_elements(); }

  Output Value(TransformCache& cache) const override {
    const Scope& s = cache.scope();
    Output x = cache.Feature(key_, key_);
    const std::string what = Describe("numeric", key_, key_);
    DType dtype = x.dtype();
    if (dtype != kFloat32 && dtype != kFloat64 && dtype != kInt32 && dtype != kInt64 &&
        dtype != kUInt8 && dtype != kBool) {
      throw InvalidArgument(what, ": the feature has dtype ", DTypeName(dtype),
                            "; a numeric dtype is needed (use a categorical column for strings)");
    }
    const int64_t dim = dimension();
    const Shape& shape = x.shape();
    if (shape.rank_known()) {
      if (shape.rank() == 0) {
        throw InvalidArgument(what, ": the feature is a scalar; features need a batch dim");
      }
      int64_t per_example = 1;
      bool known = true;
      for (int i = 1; i < shape.rank(); ++i) {
        if (shape.dim(i) < 0)
          known = false;
        else
          per_example *= shape.dim(i);
      }
      if (known && per_example != dim) {
        throw InvalidArgument(what, ": the feature has shape ", shape, " (", per_example,
                              " values per example) but the column's shape ", options_.shape,
                              " needs ", dim);
      }
    }
    Output value = Reshape(s, Cast(s, x, kFloat32), std::vector<int64_t>{-1, dim});
    if (options_.normalizer_fn) value = options_.normalizer_fn(s, value);
    return value;
  }
  Output GetDenseTensor(TransformCache& cache, const Scope&) const override { return Value(cache); }

 private:
  std::string key_;
  NumericOptions options_;
};

// ---- bucketized ----------------------------------------------------------------------------

class BucketizedColumnImpl : public DenseCategoricalColumn {
 public:
  BucketizedColumnImpl(std::shared_ptr<const internal::NumericColumnBase> source,
                       std::vector<double> boundaries)
      : source_(std::move(source)), boundaries_(std::move(boundaries)) {
    for (size_t i = 1; i < boundaries_.size(); ++i) {
      if (!(boundaries_[i - 1] < boundaries_[i])) {
        throw InvalidArgument("bucketized column '", name(),
                              "': boundaries must be sorted strictly ascending; entries ", i - 1,
                              " and ", i, " are ", boundaries_[i - 1], " and ", boundaries_[i]);
      }
    }
  }
  std::string name() const override { return source_->name() + "_bucketized"; }
  int64_t per_element() const { return static_cast<int64_t>(boundaries_.size()) + 1; }
  int64_t num_buckets() const override { return source_->dimension() * per_element(); }
  int64_t dimension() const override { return num_buckets(); }

  CategoricalIds TransformIds(TransformCache& cache) const override {
    const Scope& s = cache.scope();
    Output buckets = Bucketize(s, source_->Value(cache), boundaries_);  // [batch, d]
    const int64_t d = source_->dimension();
    if (d == 1) return {buckets, Output()};
    std::vector<int64_t> offsets(d);
    for (int64_t j = 0; j < d; ++j) offsets[j] = j * per_element();
    return {Add(s, buckets, Const(s, offsets, Shape{d})), Output()};
  }
  Output GetDenseTensor(TransformCache& cache, const Scope& scope) const override {
    CategoricalIds ids = cache.Ids(*this);
    return Sum(scope, OneHot(scope, ids.ids, num_buckets()), {1});
  }

 private:
  std::shared_ptr<const internal::NumericColumnBase> source_;
  std::vector<double> boundaries_;
};

// ---- indicator -----------------------------------------------------------------------------

class IndicatorColumnImpl : public DenseColumn {
 public:
  explicit IndicatorColumnImpl(CategoricalColumnPtr categorical)
      : categorical_(std::move(categorical)) {}
  std::string name() const override { return categorical_->name() + "_indicator"; }
  int64_t dimension() const override { return categorical_->num_buckets(); }
  Output GetDenseTensor(TransformCache& cache, const Scope& scope) const override {
    CategoricalIds ids = cache.Ids(*categorical_);
    Output w = internal::PresentWeights(scope, ids);                   // [batch, k]
    Output hot = OneHot(scope, ids.ids, categorical_->num_buckets());  // [batch, k, n]
    return Sum(scope, Mul(scope, hot, ExpandDims(scope, w, -1)), {1});
  }

 private:
  CategoricalColumnPtr categorical_;
};

// ---- embedding -----------------------------------------------------------------------------

class EmbeddingColumnImpl : public DenseColumn {
 public:
  EmbeddingColumnImpl(CategoricalColumnPtr categorical, EmbeddingColumnOptions options)
      : categorical_(std::move(categorical)), options_(std::move(options)) {
    if (options_.dimension <= 0) {
      throw InvalidArgument("embedding column '", name(), "': dimension must be > 0, got ",
                            options_.dimension);
    }
    if (!options_.initializer) {
      options_.initializer = initializers::TruncatedNormal(
          {.mean = 0.0, .stddev = 1.0 / std::sqrt(static_cast<double>(options_.dimension))});
    }
  }
  std::string name() const override { return categorical_->name() + "_embedding"; }
  int64_t dimension() const override { return options_.dimension; }
  Output GetDenseTensor(TransformCache& cache, const Scope& scope) const override {
    const Shape table_shape{categorical_->num_buckets(), options_.dimension};
    Output initial = options_.initializer(scope.NewSubScope("embedding_weights_initializer"),
                                          table_shape, kFloat32);
    Variable table(scope.WithOpName("embedding_weights"), initial,
                   {.trainable = options_.trainable, .shape = table_shape});
    return internal::CombineRows(scope, table, cache.Ids(*categorical_), options_.combiner);
  }

 private:
  CategoricalColumnPtr categorical_;
  EmbeddingColumnOptions options_;
};

}  // namespace

std::shared_ptr<const DenseColumn> NumericColumn(const std::string& key, NumericOptions options) {
  return std::make_shared<NumericColumnImpl>(key, std::move(options));
}

std::shared_ptr<const DenseCategoricalColumn> BucketizedColumn(
    const DenseColumnPtr& source, const std::vector<double>& boundaries) {
  auto numeric = std::dynamic_pointer_cast<const internal::NumericColumnBase>(source);
  if (numeric == nullptr) {
    throw InvalidArgument("bucketized column: the source must be a NumericColumn, got column '",
                          source ? source->name() : std::string("null"), "'");
  }
  return std::make_shared<BucketizedColumnImpl>(std::move(numeric), boundaries);
}

std::shared_ptr<const DenseColumn> IndicatorColumn(const CategoricalColumnPtr& categorical) {
  if (categorical == nullptr) throw InvalidArgument("indicator column: categorical column is null");
  return std::make_shared<IndicatorColumnImpl>(categorical);
}

std::shared_ptr<const DenseColumn> EmbeddingColumn(const CategoricalColumnPtr& categorical,
                                                   EmbeddingColumnOptions options) {
  if (categorical == nullptr) throw InvalidArgument("embedding column: categorical column is null");
  return std::make_shared<EmbeddingColumnImpl>(categorical, std::move(options));
}

Output InputLayer(const Scope& scope, const Features& features,
                  const std::vector<DenseColumnPtr>& columns, const InputLayerOptions& options) {
  if (columns.empty()) {
    throw InvalidArgument("InputLayer: feature_columns is empty; pass at least one dense column");
  }
  std::vector<DenseColumnPtr> sorted = columns;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a->name() < b->name(); });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->name() == sorted[i - 1]->name()) {
      throw InvalidArgument("InputLayer: two feature columns are named '", sorted[i]->name(),
                            "'; column names must be unique");
    }
  }
  Scope layer = scope.NewSubScope(options.name);
  TransformCache cache(layer, features);
  std::vector<Output> parts;
  for (const DenseColumnPtr& column : sorted) {
    Scope column_scope = layer.NewSubScope(column->name());
    parts.push_back(column->GetDenseTensor(cache, column_scope));
  }
  if (parts.size() == 1) return parts[0];
  return Concat(layer.WithOpName("concat"), parts, 1);
}

}  // namespace loom::feature_column
