#ifndef LOOM_ESTIMATOR_FEATURE_COLUMN_H_
#define LOOM_ESTIMATOR_FEATURE_COLUMN_H_

// Feature columns, TF1's tf.feature_column: immutable descriptions of how a model turns
// named input features into tensors. Dense columns (numeric, bucketized, indicator,
// embedding) feed InputLayer, the dense input of a DNN; categorical columns (vocabulary,
// hash bucket, identity, crossed, weighted, bucketized) feed LinearModel directly and
// DNNs through an indicator or embedding column.
//
//   namespace fc = loom::feature_column;
//   auto age = fc::NumericColumn("age");
//   auto age_buckets = fc::BucketizedColumn(age, {18, 25, 30, 40, 50, 65});
//   auto job = fc::CategoricalColumnWithHashBucket("occupation", 1000);
//   auto edu = fc::CategoricalColumnWithVocabularyList("education", {"HS", "BSc", "MSc"});
//   auto cross = fc::CrossedColumn({edu, age_buckets}, 500);
//   Output logits = fc::LinearModel(s, features, {age_buckets, edu, job, cross});
//   Output dense = fc::InputLayer(s, features, {age, fc::IndicatorColumn(edu),
//                                               fc::EmbeddingColumn(job, {.dimension = 8})});
//
// Inputs. Every feature's dim 0 is the batch. Numeric features are dense, [batch] or
// [batch, d...] of any numeric dtype (cast to float32). Categorical features are dense
// [batch] (one value per example) or [batch, k] (multi-valued, k values per example; an
// example with fewer values is padded with "" (string features) or -1 (integer
// features), and padding entries count as absent), or a rank-2 SparseTensor [batch, ?]
// (a VarLenFeature; AddSparseFeature below), which the column reads as the dense
// [batch, longest row] padded that way: TF's columns on sparse input, the same ids.
// Internally a categorical column yields int64 ids [batch, k] with -1 for absent entries,
// plus optional float32 weights [batch, k] (WeightedCategoricalColumn).
//
// Errors: a feature key missing from the input, a feature of the wrong dtype or a shape
// that does not match the column throw InvalidArgument naming the column and the key when
// the graph is built; a bad id (identity column out of range without a default) fails at
// run time naming them too.
//
// Hashing is FNV-1a + fmix64 (feature_column_ops.h), not TF's Fingerprint64, so hash
// buckets differ from TF's. Column objects are immutable and may be shared across graphs
// and threads; the functions that build graph ops are single-threaded like every builder.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/base/env.h"
#include "loom/estimator/estimator_spec.h"
#include "loom/estimator/initializers.h"
#include "loom/graph/op_def.h"
#include "loom/ops/sparse.h"

namespace loom::feature_column {

class TransformCache;

// A categorical column's value for one batch: int64 ids [batch, k], -1 where absent, and
// float32 weights [batch, k] (invalid Output: every present id weighs 1).
struct CategoricalIds {
  Output ids;
  Output weights;
};

// The common base. name() is TF's column name ("age", "age_bucketized", "a_X_b",
// "job_indicator", "job_embedding"); columns are sorted by it in InputLayer and
// LinearModel, and it names their variables.
class FeatureColumn {
 public:
  virtual ~FeatureColumn() = default;
  virtual std::string name() const = 0;
};

// A column that is a float32 [batch, dimension()] tensor.
class DenseColumn : public virtual FeatureColumn {
 public:
  virtual int64_t dimension() const = 0;
  // Builds the tensor under `scope` (which also holds any variables, e.g. an embedding
  // table named "<scope>/embedding_weights").
  virtual Output GetDenseTensor(TransformCache& cache, const Scope& scope) const = 0;
};

// A column whose values are ids in [0, num_buckets()).
class CategoricalColumn : public virtual FeatureColumn {
 public:
  virtual int64_t num_buckets() const = 0;
  // Builds the ids; call through TransformCache::Ids so shared columns run once.
  virtual CategoricalIds TransformIds(TransformCache& cache) const = 0;
};

// Bucketized columns are both.
class DenseCategoricalColumn : public DenseColumn, public CategoricalColumn {};

using FeatureColumnPtr = std::shared_ptr<const FeatureColumn>;
using DenseColumnPtr = std::shared_ptr<const DenseColumn>;
using CategoricalColumnPtr = std::shared_ptr<const CategoricalColumn>;

// The features a graph's columns read, and the ids each categorical column produced, so a
// column used by several others (an embedding and a cross) builds its ops once.
class TransformCache {
 public:
  TransformCache(const Scope& scope, const Features& features)
      : scope_(scope), features_(features) {}
  // The dense feature `key` that column `column` reads. Throws InvalidArgument naming the
  // column, the key and the features present when it is absent, and naming the
  // workarounds when it is a SparseTensor feature (categorical columns read those through
  // SparseFeature).
  Output Feature(const std::string& key, const std::string& column) const;
  // The SparseTensor feature `key` (AddSparseFeature), or nullopt when there is none.
  std::optional<SparseTensor> SparseFeature(const std::string& key) const;
  CategoricalIds Ids(const CategoricalColumn& column);
  // Where transformations build their ops.
  const Scope& scope() const { return scope_; }

 private:
  Scope scope_;
  const Features& features_;
  std::map<const CategoricalColumn*, CategoricalIds> ids_;
};

// ---- Sparse features ----------------------------------------------------------------------

// Features maps names to dense Outputs; a SparseTensor feature `key` travels in it as the
// three entries "<key>/indices", "<key>/values" and "<key>/dense_shape" (so it passes
// through input functions, datasets and model functions like dense features). Throws
// InvalidArgument when `key` or one of the entries is already there.
void AddSparseFeature(Features& features, const std::string& key, const SparseTensor& sp);
// The SparseTensor feature `key`, or nullopt when not all three entries are there.
std::optional<SparseTensor> FindSparseFeature(const Features& features, const std::string& key);

// ---- Dense columns ------------------------------------------------------------------------

using Normalizer = std::function<Output(const Scope&, Output)>;
struct NumericOptions {
  // The per-example shape; the feature must be [batch] + shape (or [batch] for {1}).
  // Default: {1}.
  Shape shape = Shape{1};
  // Applied to the float32 value, e.g. [](auto& s, Output x) { return Div(s, Sub(s, x, mu), sd); }.
  // Default: none.
  Normalizer normalizer_fn;
};
// A numeric feature as float32 [batch, prod(shape)].
std::shared_ptr<const DenseColumn> NumericColumn(const std::string& key,
                                                 NumericOptions options = {});

// Buckets of a numeric column's values by `boundaries` (sorted strictly ascending):
// len(boundaries) + 1 buckets per element, bucket i holding [b[i-1], b[i]). As a dense
// column: one-hot [batch, d * (len + 1)]; as a categorical one: d ids per example, element
// j's bucket offset by j * (len + 1). REQUIRES: source made by NumericColumn.
std::shared_ptr<const DenseCategoricalColumn> BucketizedColumn(
    const DenseColumnPtr& source, const std::vector<double>& boundaries);

// Multi-hot [batch, num_buckets]: entry i is the sum of the weights of id i in the row
// (1 per occurrence for unweighted columns).
std::shared_ptr<const DenseColumn> IndicatorColumn(const CategoricalColumnPtr& categorical);

// How the ids of one example are combined (TF's combiner strings).
enum class Combiner {
  kSum,    // sum_i w_i * v_i
  kMean,   // sum_i w_i * v_i / sum_i w_i
  kSqrtN,  // sum_i w_i * v_i / sqrt(sum_i w_i^2)
};
struct EmbeddingColumnOptions {
  // Embedding width. REQUIRES: > 0.
  int64_t dimension = 0;
  // Default: kMean (TF's default).
  Combiner combiner = Combiner::kMean;
  // Of the table [num_buckets, dimension]. Default: TruncatedNormal(0, 1 / sqrt(dimension)),
  // as TF.
  initializers::Initializer initializer;
  // Default: true.
  bool trainable = true;
};
// The combined embedding of each example's ids, float32 [batch, dimension]; an example
// with no ids gets zeros. The table "<input scope>/<name>/embedding_weights" is looked up
// with Gather, so its gradient (and optimizer update) touches only the rows used.
std::shared_ptr<const DenseColumn> EmbeddingColumn(const CategoricalColumnPtr& categorical,
                                                   EmbeddingColumnOptions options);

// ---- Categorical columns --------------------------------------------------------------------

struct VocabularyOptions {
  // Ids of out-of-vocabulary values when num_oov_buckets is 0. Default: -1 (absent).
  int64_t default_value = -1;
  // Out-of-vocabulary values hash into this many extra buckets after the vocabulary
  // (num_buckets = vocabulary size + num_oov_buckets). Default: 0.
  int64_t num_oov_buckets = 0;
};
// Ids by position in `vocabulary` (string features; "" may not be an entry, it is padding).
CategoricalColumnPtr CategoricalColumnWithVocabularyList(const std::string& key,
                                                         std::vector<std::string> vocabulary,
                                                         VocabularyOptions options = {});
// Integer features (int32/int64); -1 may not be an entry.
CategoricalColumnPtr CategoricalColumnWithVocabularyList(const std::string& key,
                                                         std::vector<int64_t> vocabulary,
                                                         VocabularyOptions options = {});

struct VocabularyFileOptions {
  // Read only the first this many lines. Default: -1, the whole file.
  int64_t vocabulary_size = -1;
  int64_t default_value = -1;   // Default: -1 (see VocabularyOptions)
  int64_t num_oov_buckets = 0;  // Default: 0
  // kString, or kInt64 for a file of integers. Default: kString.
  DType dtype = kString;
  // Where the file is read. Default: nullptr, Env::Default().
  Env* env = nullptr;
};
// The vocabulary is one entry per line of `path`, read when the column is made (so a
// missing file is NotFound here, naming it) and stored with the graph.
CategoricalColumnPtr CategoricalColumnWithVocabularyFile(const std::string& key,
                                                         const std::string& path,
                                                         VocabularyFileOptions options = {});

// FeatureHash64(value) % hash_bucket_size for string or integer features (integers hash
// as their decimal string). `dtype` is the feature's expected kind: kString or an integer
// dtype (int32 and int64 both accepted). Default: kString.
CategoricalColumnPtr CategoricalColumnWithHashBucket(const std::string& key,
                                                     int64_t hash_bucket_size,
                                                     DType dtype = kString);

// Integer features used as ids directly. An id outside [0, num_buckets) becomes
// default_value when given, else fails at run time naming the column and the id.
CategoricalColumnPtr CategoricalColumnWithIdentity(const std::string& key, int64_t num_buckets,
                                                   std::optional<int64_t> default_value = {});

// One input of a cross: a raw feature key (its values hashed) or a categorical column
// (its ids).
struct CrossKey {
  CrossKey(const char* key) : key(key) {}
  CrossKey(std::string key) : key(std::move(key)) {}
  template <typename T>
  requires std::is_convertible_v<std::shared_ptr<T>, CategoricalColumnPtr> CrossKey(
      const std::shared_ptr<T>& c)
      : column(c) {}
  std::string key;
  CategoricalColumnPtr column;
};
// The cross product of the inputs' values, hashed into hash_bucket_size buckets
// (feature_column_ops.h CrossIds): each example gets prod k_i ids. Its name joins the
// inputs' names with "_X_" (sorted, as TF). REQUIRES: >= 2 keys, hash_bucket_size > 0.
// Default hash_key: TF's SPARSE_FEATURE_CROSS_DEFAULT_HASH_KEY.
CategoricalColumnPtr CrossedColumn(const std::vector<CrossKey>& keys, int64_t hash_bucket_size,
                                   uint64_t hash_key = 0xDECAFCAFFEULL);

// `categorical`'s ids weighted by the float feature `weight_feature_key`, which must have
// the ids' shape. Weights of absent ids are ignored.
CategoricalColumnPtr WeightedCategoricalColumn(const CategoricalColumnPtr& categorical,
                                               const std::string& weight_feature_key);

// ---- Building the model inputs ----------------------------------------------------------

struct InputLayerOptions {
  // Name scope. Default: "input_layer".
  std::string name = "input_layer";
};
// The dense tensor float32 [batch, sum of dimensions] of `columns`, concatenated in order
// of their names (TF's order). Throws InvalidArgument for an empty list, duplicate names,
// and the per-column errors above.
Output InputLayer(const Scope& scope, const Features& features,
                  const std::vector<DenseColumnPtr>& columns,
                  const InputLayerOptions& options = {});

struct LinearModelOptions {
  // Logits per example. Default: 1.
  int64_t units = 1;
  // How a multi-valued categorical column's weights combine. Default: kSum (TF's).
  Combiner sparse_combiner = Combiner::kSum;
  // Name scope. Default: "linear_model".
  std::string name = "linear_model";
};
// logits [batch, units] = sum over columns + "<name>/bias_weights" [units]. A categorical
// column has weights "<name>/<column>/weights" [num_buckets, units] read by Gather, so the
// gradient is sparse (only the rows of ids in the batch); a dense column has weights
// [dimension, units] multiplied with its tensor. Bucketized columns count as categorical.
// Every weight starts at zero (TF's default).
Output LinearModel(const Scope& scope, const Features& features,
                   const std::vector<FeatureColumnPtr>& columns,
                   const LinearModelOptions& options = {});

}  // namespace loom::feature_column

#endif  // LOOM_ESTIMATOR_FEATURE_COLUMN_H_
