// Categorical columns: vocabulary list / file, hash bucket, identity, crossed, weighted.
#include <algorithm>
#include <sstream>

#include "loom/base/strcat.h"
#include "loom/estimator/feature_column_internal.h"
#include "loom/estimator/feature_column_ops.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"

namespace loom::feature_column {

using internal::Describe;

Output internal::CategoricalInput(TransformCache& cache, const std::string& key,
                                  const std::string& column) {
  std::optional<SparseTensor> sp = cache.SparseFeature(key);
  if (!sp) return cache.Feature(key, column);
  const Shape& index_shape = sp->indices.shape();
  if (index_shape.rank_known() && index_shape.rank() == 2 && index_shape.dim(1) >= 0 &&
      index_shape.dim(1) != 2) {
    throw InvalidArgument(Describe("categorical", column, key),
                          ": a sparse feature must be rank 2, [batch, ?] (parse_example's "
                          "VarLenFeature), its indices are ",
                          index_shape);
  }
  // Padding is what the id ops read as absent: "" for strings, -1 for integers; weights of
  // absent ids are ignored, so 0 for floats.
  const Scope s = cache.scope().NewSubScope(key + "_to_dense");
  const DType dtype = sp->dtype();
  Output dense;
  if (dtype == kString) {
    dense = SparseToDense(s, *sp, Tensor::ScalarString(""));
  } else if (dtype == kInt32 || dtype == kInt64) {
    dense = SparseToDense(s, *sp, AsOutput(s, -1, dtype));
  } else {
    dense = SparseToDense(s, *sp, AsOutput(s, 0.0, dtype));
  }
  if (!dense.shape().rank_known()) {
    throw InvalidArgument(Describe("categorical", column, key),
                          ": the sparse feature's rank is unknown (its dense_shape has no static "
                          "length); give it a static rank of 2, e.g. tf.sparse_placeholder(dtype, "
                          "shape=[None, None])");
  }
  return dense;
}

namespace {

bool IsIntegerDType(DType dtype) { return dtype == kInt32 || dtype == kInt64; }

// The feature `key` of `column`, checked to be string (want_string) or integer.
Output CategoricalFeature(TransformCache& cache, const std::string& column, const std::string& key,
                          bool want_string) {
  Output x = internal::CategoricalInput(cache, key, column);
  const std::string what = Describe("categorical", column, key);
  if (want_string && x.dtype() != kString) {
    throw InvalidArgument(what, ": the feature has dtype ", DTypeName(x.dtype()),
                          " but the column takes strings");
  }
  if (!want_string && !IsIntegerDType(x.dtype())) {
    throw InvalidArgument(what, ": the feature has dtype ", DTypeName(x.dtype()),
                          " but the column takes integers (int32 or int64)");
  }
  return internal::AsIdMatrix(cache.scope(), x, what);
}

// ---- vocabulary ----------------------------------------------------------------------------

class VocabularyColumnImpl : public CategoricalColumn {
 public:
  VocabularyColumnImpl(std::string key, std::vector<std::string> strings, std::vector<int64_t> ints,
                       bool is_string, VocabularyOptions options)
      : key_(std::move(key)),
        strings_(std::move(strings)),
        ints_(std::move(ints)),
        is_string_(is_string),
        options_(options) {
    const std::string what = StrCat("vocabulary column '", key_, "'");
    const int64_t size = is_string_ ? strings_.size() : ints_.size();
    if (size == 0) throw InvalidArgument(what, ": the vocabulary is empty");
    if (options_.num_oov_buckets < 0) {
      throw InvalidArgument(what, ": num_oov_buckets must be >= 0, got ", options_.num_oov_buckets);
    }
    if (options_.num_oov_buckets > 0 && options_.default_value != -1) {
      throw InvalidArgument(what, ": set default_value or num_oov_buckets, not both");
    }
    if (options_.default_value < -1 || options_.default_value >= size) {
      throw InvalidArgument(what, ": default_value ", options_.default_value, " is outside [-1, ",
                            size, ")");
    }
    if (is_string_) {
      std::vector<std::string> sorted = strings_;
      std::sort(sorted.begin(), sorted.end());
      if (sorted.front().empty()) {
        throw InvalidArgument(what, ": \"\" cannot be a vocabulary entry (it marks padding)");
      }
      auto dup = std::adjacent_find(sorted.begin(), sorted.end());
      if (dup != sorted.end()) throw InvalidArgument(what, ": duplicate entry '", *dup, "'");
    } else {
      std::vector<int64_t> sorted = ints_;
      std::sort(sorted.begin(), sorted.end());
      if (std::binary_search(sorted.begin(), sorted.end(), int64_t{-1})) {
        throw InvalidArgument(what, ": -1 cannot be a vocabulary entry (it marks padding)");
      }
      auto dup = std::adjacent_find(sorted.begin(), sorted.end());
      if (dup != sorted.end()) throw InvalidArgument(what, ": duplicate entry ", *dup);
    }
  }
  std::string name() const override { return key_; }
  int64_t num_buckets() const override {
    return static_cast<int64_t>(is_string_ ? strings_.size() : ints_.size()) +
           options_.num_oov_buckets;
  }
  CategoricalIds TransformIds(TransformCache& cache) const override {
    Output keys = CategoricalFeature(cache, key_, key_, is_string_);
    LookupOptions lookup{.num_oov_buckets = options_.num_oov_buckets,
                         .default_value = options_.default_value,
                         .error_context = std::nullopt};
    Scope s = cache.scope().NewSubScope(key_ + "_lookup");
    return {is_string_ ? VocabularyLookup(s, keys, strings_, lookup)
                       : VocabularyLookup(s, keys, ints_, lookup),
            Output()};
  }

 private:
  std::string key_;
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
  bool is_string_;
  VocabularyOptions options_;
};

// ---- hash bucket ---------------------------------------------------------------------------

class HashBucketColumnImpl : public CategoricalColumn {
 public:
  HashBucketColumnImpl(std::string key, int64_t size, DType dtype)
      : key_(std::move(key)), size_(size), dtype_(dtype) {
    if (size_ <= 1) {
      throw InvalidArgument("hash bucket column '", key_, "': hash_bucket_size must be > 1, got ",
                            size_);
    }
    if (dtype_ != kString && !IsIntegerDType(dtype_)) {
      throw InvalidArgument("hash bucket column '", key_,
                            "': dtype must be string or an integer, "
                            "got ",
                            DTypeName(dtype_));
    }
  }
  std::string name() const override { return key_; }
  int64_t num_buckets() const override { return size_; }
  CategoricalIds TransformIds(TransformCache& cache) const override {
    Output keys = CategoricalFeature(cache, key_, key_, dtype_ == kString);
    return {HashBucket(cache.scope().NewSubScope(key_ + "_hash"), keys, size_), Output()};
  }

 private:
  std::string key_;
  int64_t size_;
  DType dtype_;
};

// ---- identity ------------------------------------------------------------------------------

class IdentityColumnImpl : public CategoricalColumn {
 public:
  IdentityColumnImpl(std::string key, int64_t num_buckets, std::optional<int64_t> default_value)
      : key_(std::move(key)), num_buckets_(num_buckets), default_value_(default_value) {
    if (num_buckets_ < 1) {
      throw InvalidArgument("identity column '", key_, "': num_buckets must be >= 1, got ",
                            num_buckets_);
    }
    if (default_value_ && (*default_value_ < 0 || *default_value_ >= num_buckets_)) {
      throw InvalidArgument("identity column '", key_, "': default_value ", *default_value_,
                            " is outside [0, ", num_buckets_, ")");
    }
  }
  std::string name() const override { return key_; }
  int64_t num_buckets() const override { return num_buckets_; }
  CategoricalIds TransformIds(TransformCache& cache) const override {
    Output ids = CategoricalFeature(cache, key_, key_, /*want_string=*/false);
    return {CheckIds(cache.scope().NewSubScope(key_ + "_identity"), ids, num_buckets_,
                     default_value_, Describe("identity", key_, key_)),
            Output()};
  }

 private:
  std::string key_;
  int64_t num_buckets_;
  std::optional<int64_t> default_value_;
};

// ---- crossed -------------------------------------------------------------------------------

class CrossedColumnImpl : public CategoricalColumn {
 public:
  CrossedColumnImpl(std::vector<CrossKey> keys, int64_t size, uint64_t hash_key)
      : keys_(std::move(keys)), size_(size), hash_key_(hash_key) {
    std::vector<std::string> names;
    for (const CrossKey& k : keys_) names.push_back(k.column ? k.column->name() : k.key);
    std::sort(names.begin(), names.end());
    name_ = StrJoin(names, "_X_");
    if (keys_.size() < 2) {
      throw InvalidArgument("crossed column '", name_, "': needs at least two keys, got ",
                            keys_.size());
    }
    if (size_ <= 1) {
      throw InvalidArgument("crossed column '", name_, "': hash_bucket_size must be > 1, got ",
                            size_);
    }
    for (const CrossKey& k : keys_) {
      if (!k.column && k.key.empty()) {
        throw InvalidArgument("crossed column '", name_, "': an empty key or null column");
      }
    }
  }
  std::string name() const override { return name_; }
  int64_t num_buckets() const override { return size_; }
  CategoricalIds TransformIds(TransformCache& cache) const override {
    Scope s = cache.scope().NewSubScope(name_ + "_cross");
    std::vector<Output> parts;
    for (const CrossKey& k : keys_) {
      if (k.column) {
        CategoricalIds ids = cache.Ids(*k.column);
        if (ids.weights.valid()) {
          throw InvalidArgument("crossed column '", name_, "': column '", k.column->name(),
                                "' is weighted; crosses take unweighted columns");
        }
        parts.push_back(ids.ids);
      } else {
        Output x = internal::CategoricalInput(cache, k.key, name_);
        const std::string what = Describe("crossed", name_, k.key);
        if (x.dtype() != kString && !IsIntegerDType(x.dtype())) {
          throw InvalidArgument(what, ": the feature has dtype ", DTypeName(x.dtype()),
                                "; raw keys in a cross must be string or integer features "
                                "(bucketize numeric ones)");
        }
        parts.push_back(FingerprintKeys(s, internal::AsIdMatrix(s, x, what)));
      }
    }
    return {CrossIds(s, parts, size_, hash_key_), Output()};
  }

 private:
  std::vector<CrossKey> keys_;
  int64_t size_;
  uint64_t hash_key_;
  std::string name_;
};

// ---- weighted ------------------------------------------------------------------------------

class WeightedColumnImpl : public CategoricalColumn {
 public:
  WeightedColumnImpl(CategoricalColumnPtr categorical, std::string weight_key)
      : categorical_(std::move(categorical)), weight_key_(std::move(weight_key)) {}
  std::string name() const override { return categorical_->name() + "_weighted_by_" + weight_key_; }
  int64_t num_buckets() const override { return categorical_->num_buckets(); }
  CategoricalIds TransformIds(TransformCache& cache) const override {
    CategoricalIds base = cache.Ids(*categorical_);
    if (base.weights.valid()) {
      throw InvalidArgument("weighted column '", name(), "': column '", categorical_->name(),
                            "' is already weighted");
    }
    Output w = internal::CategoricalInput(cache, weight_key_, name());
    const std::string what = Describe("weighted categorical", name(), weight_key_);
    if (w.dtype() != kFloat32 && w.dtype() != kFloat64 && !IsIntegerDType(w.dtype())) {
      throw InvalidArgument(what, ": weights have dtype ", DTypeName(w.dtype()),
                            "; a numeric dtype is needed");
    }
    const Scope& s = cache.scope();
    Output weights = internal::AsIdMatrix(s, Cast(s, w, kFloat32), what);
    if (!weights.shape().IsCompatibleWith(base.ids.shape())) {
      throw InvalidArgument(what, ": weights of shape ", weights.shape(),
                            " do not match the ids of '", categorical_->name(), "' of shape ",
                            base.ids.shape());
    }
    return {base.ids, weights};
  }

 private:
  CategoricalColumnPtr categorical_;
  std::string weight_key_;
};

}  // namespace

CategoricalColumnPtr CategoricalColumnWithVocabularyList(const std::string& key,
                                                         std::vector<std::string> vocabulary,
                                                         VocabularyOptions options) {
  return std::make_shared<VocabularyColumnImpl>(key, std::move(vocabulary), std::vector<int64_t>{},
                                                true, options);
}

CategoricalColumnPtr CategoricalColumnWithVocabularyList(const std::string& key,
                                                         std::vector<int64_t> vocabulary,
                                                         VocabularyOptions options) {
  return std::make_shared<VocabularyColumnImpl>(key, std::vector<std::string>{},
                                                std::move(vocabulary), false, options);
}

CategoricalColumnPtr CategoricalColumnWithVocabularyFile(const std::string& key,
                                                         const std::string& path,
                                                         VocabularyFileOptions options) {
  Env* env = options.env ? options.env : Env::Default();
  if (!env->FileExists(path)) {
    throw NotFound("vocabulary column '", key, "': vocabulary file '", path, "' does not exist");
  }
  std::istringstream in(ReadFileToString(env, path));
  std::vector<std::string> lines;
  std::string line;
  while ((options.vocabulary_size < 0 ||
          static_cast<int64_t>(lines.size()) < options.vocabulary_size) &&
         std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  if (options.vocabulary_size >= 0 &&
      static_cast<int64_t>(lines.size()) < options.vocabulary_size) {
    throw InvalidArgument("vocabulary column '", key, "': vocabulary_size is ",
                          options.vocabulary_size, " but '", path, "' has only ", lines.size(),
                          " lines");
  }
  VocabularyOptions vocab{.default_value = options.default_value,
                          .num_oov_buckets = options.num_oov_buckets};
  if (options.dtype == kString) return CategoricalColumnWithVocabularyList(key, lines, vocab);
  if (!IsIntegerDType(options.dtype)) {
    throw InvalidArgument("vocabulary column '", key, "': dtype must be string or an integer, got ",
                          DTypeName(options.dtype));
  }
  std::vector<int64_t> ints;
  for (size_t i = 0; i < lines.size(); ++i) {
    try {
      size_t used = 0;
      ints.push_back(std::stoll(lines[i], &used));
      if (used != lines[i].size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      throw InvalidArgument("vocabulary column '", key, "': line ", i + 1, " of '", path,
                            "' is not an integer: '", lines[i], "'");
    }
  }
  return CategoricalColumnWithVocabularyList(key, std::move(ints), vocab);
}

CategoricalColumnPtr CategoricalColumnWithHashBucket(const std::string& key,
                                                     int64_t hash_bucket_size, DType dtype) {
  return std::make_shared<HashBucketColumnImpl>(key, hash_bucket_size, dtype);
}

CategoricalColumnPtr CategoricalColumnWithIdentity(const std::string& key, int64_t num_buckets,
                                                   std::optional<int64_t> default_value) {
  return std::make_shared<IdentityColumnImpl>(key, num_buckets, default_value);
}

CategoricalColumnPtr CrossedColumn(const std::vector<CrossKey>& keys, int64_t hash_bucket_size,
                                   uint64_t hash_key) {
  return std::make_shared<CrossedColumnImpl>(keys, hash_bucket_size, hash_key);
}

CategoricalColumnPtr WeightedCategoricalColumn(const CategoricalColumnPtr& categorical,
                                               const std::string& weight_feature_key) {
  if (categorical == nullptr) {
    throw InvalidArgument("weighted categorical column: categorical column is null");
  }
  return std::make_shared<WeightedColumnImpl>(categorical, weight_feature_key);
}

}  // namespace loom::feature_column
