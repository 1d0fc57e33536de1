#ifndef LOOM_ESTIMATOR_FEATURE_COLUMN_OPS_H_
#define LOOM_ESTIMATOR_FEATURE_COLUMN_OPS_H_

// The kernels behind feature columns (feature_column.h): bucketizing, vocabulary lookup,
// hashing, identity range checks, crossing and id-to-string conversion. All map ids
// element-wise (Cross maps rows) and none is differentiable: their outputs are integer ids.
//
// Missing values: categorical inputs are dense tensors [batch] or [batch, k]; a row with
// fewer than k values is padded with "" (strings) or -1 (integers). Every op here maps a
// padding entry to id -1, and feature columns drop id -1 (weight 0) downstream.
//
// Hashing (not bit-exact with TF's Fingerprint64): FeatureHash64 is 64-bit FNV-1a over the
// bytes followed by MurmurHash3's fmix64 finalizer; integer keys are hashed as their decimal
// string (as TF's hash bucket does with as_string), so the int 7 and the string "7" share a
// bucket. Crosses combine per-component values with HashCombine (below), seeded by
// hash_key, then take the result modulo hash_bucket_size.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::feature_column {

// See the header comment. Stable across runs, platforms and builds.
uint64_t FeatureHash64(std::string_view bytes);
// Mixes `value` into `seed` (order-dependent); the cross hash.
uint64_t HashCombine(uint64_t seed, uint64_t value);

// int64 bucket of each element of numeric x (same shape): 0 for x < boundaries[0], i for
// boundaries[i-1] <= x < boundaries[i], boundaries.size() for x >= the last.
// REQUIRES: boundaries sorted strictly ascending (InvalidArgument otherwise).
Output Bucketize(const Scope& scope, Input x, const std::vector<double>& boundaries);

struct LookupOptions {
  // Out-of-vocabulary keys go to vocabulary_size + FeatureHash64(key) % num_oov_buckets.
  // Default: 0.
  int64_t num_oov_buckets = 0;
  // The id of an out-of-vocabulary key when num_oov_buckets is 0. Default: -1 (dropped).
  int64_t default_value = -1;
  // When set, an out-of-vocabulary key fails at run time with InvalidArgument whose
  // message starts with this text (label vocabularies). Default: unset.
  std::optional<std::string> error_context;
};
// Index of each key in the vocabulary (int64, same shape as keys), built once per Session
// into a hash table. String vocabularies take string keys; integer vocabularies take int32
// or int64 keys. Padding ("" / -1) maps to -1.
Output VocabularyLookup(const Scope& scope, Input keys, const std::vector<std::string>& vocabulary,
                        const LookupOptions& options = {});
Output VocabularyLookup(const Scope& scope, Input keys, const std::vector<int64_t>& vocabulary,
                        const LookupOptions& options = {});

// FeatureHash64(key) % num_buckets for string or integer keys (int64 ids, same shape);
// padding maps to -1. REQUIRES: num_buckets > 0.
Output HashBucket(const Scope& scope, Input keys, int64_t num_buckets);
// FeatureHash64(key) with the top bit cleared (a non-negative int64), padding -1: raw
// keys as crossing inputs.
Output FingerprintKeys(const Scope& scope, Input keys);

// Integer ids checked against [0, num_buckets): -1 stays -1 (padding); another id outside
// the range becomes default_value when set, else fails at run time with InvalidArgument
// naming `context` (the column and feature), the id and the range. Output int64.
Output CheckIds(const Scope& scope, Input ids, int64_t num_buckets,
                std::optional<int64_t> default_value, const std::string& context);

// `labels` unchanged, after a run-time check that every value is in [0, max_label]
// (exclusive: [0, max_label)); otherwise InvalidArgument "<context>: label 5 at position 9
// is outside the valid range [0, 1]". NaN is outside every range. Any numeric dtype.
Output CheckLabelRange(const Scope& scope, Input labels, double max_label, bool exclusive,
                       const std::string& context);

// The cross of int64 id tensors, each [batch] or [batch, k_i]: row r of the output
// [batch, prod k_i] holds, for every combination (one id per input, the first input
// varying slowest), HashCombine over the ids seeded by hash_key, modulo hash_bucket_size;
// -1 where any id of the combination is -1. REQUIRES: hash_bucket_size > 0, >= 2 inputs.
Output CrossIds(const Scope& scope, const std::vector<Output>& ids, int64_t hash_bucket_size,
                uint64_t hash_key);

// Integer ids as strings: vocabulary[id] when a vocabulary is given (an id outside it fails
// naming the id), else the decimal representation. Same shape, kString.
Output IdsToStrings(const Scope& scope, Input ids, const std::vector<std::string>& vocabulary = {});

void RegisterFeatureColumnOps(OpRegistry& registry);

}  // namespace loom::feature_column

#endif  // LOOM_ESTIMATOR_FEATURE_COLUMN_OPS_H_
