// Op records of the feature-column family: Bucketize, VocabularyLookup, HashBucket,
// FingerprintKeys, CheckIds, CrossIds, IdsToStrings. None has a gradient (integer ids).
#include "loom/estimator/feature_column_ops.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace loom::feature_column {
namespace {

inline constexpr Attr<std::vector<double>> kBoundaries{"boundaries"};
inline constexpr Attr<std::vector<std::string>> kStringVocabulary{"string_vocabulary"};
inline constexpr Attr<std::vector<int64_t>> kIntVocabulary{"int_vocabulary"};
inline constexpr Attr<int64_t> kNumOovBuckets{"num_oov_buckets"};
inline constexpr Attr<int64_t> kDefaultValue{"default_value"};
inline constexpr Attr<bool> kStrict{"strict"};
inline constexpr Attr<std::string> kErrorContext{"error_context"};
inline constexpr Attr<int64_t> kNumBuckets{"num_buckets"};
inline constexpr Attr<double> kMaxLabel{"max_label"};
inline constexpr Attr<bool> kExclusive{"exclusive"};
inline constexpr Attr<std::string> kContext{"context"};
inline constexpr Attr<bool> kHasDefault{"has_default"};
inline constexpr Attr<int64_t> kHashBucketSize{"hash_bucket_size"};
inline constexpr Attr<int64_t> kHashKey{"hash_key"};
inline constexpr Attr<std::vector<std::string>> kVocabulary{"vocabulary"};

constexpr char kIdsNoGradient[] = "its output is integer ids";

uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

bool IsIntegerKey(DType dtype) { return dtype == kInt32 || dtype == kInt64; }

// The i-th key of an integer tensor as int64.
int64_t IntKey(const Tensor& t, int64_t i) {
  return t.dtype() == kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
}

// Hash of key i: strings by bytes, integers by decimal string (see the header).
// REQUIRES: the key is not padding.
uint64_t KeyHash(const Tensor& keys, int64_t i) {
  if (keys.dtype() == kString) return FeatureHash64(keys.data<std::string>()[i]);
  return FeatureHash64(std::to_string(IntKey(keys, i)));
}

bool IsPadding(const Tensor& keys, int64_t i) {
  if (keys.dtype() == kString) return keys.data<std::string>()[i].empty();
  return IntKey(keys, i) == -1;
}

void KeysShape(InferenceContext& c) {
  c.ExpectDType(0, {kString, kInt32, kInt64});
  c.set_output(0, kInt64, c.input_shape(0));
}

// ---- Bucketize --------------------------------------------------------------------------

const OpDef& BucketizeOp() {
  static const OpDef op = {
      .name = "Bucketize",
      .num_inputs = 1,
      .attrs = {kBoundaries.Required()},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64, kInt32, kInt64, kUInt8});
            const std::vector<double> b = c.attr(kBoundaries);
            for (size_t i = 1; i < b.size(); ++i) {
              if (!(b[i - 1] < b[i])) {
                c.Fail("boundaries must be sorted strictly ascending; entries ", i - 1, " and ", i,
                       " are ", b[i - 1], " and ", b[i]);
              }
            }
            c.set_output(0, kInt64, c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const std::vector<double> b = c.attr(kBoundaries);
            Tensor out = c.AllocateOutput(0, x.shape());
            int64_t* o = out.data<int64_t>();
            SwitchNumeric(x.dtype(), "Bucketize", [&](auto tag) {
              using T = decltype(tag);
              const T* in = x.data<T>();
              for (int64_t i = 0; i < x.NumElements(); ++i) {
                // upper_bound: the first boundary > x, so x == boundary goes to the right.
                o[i] = std::upper_bound(b.begin(), b.end(), static_cast<double>(in[i])) - b.begin();
              }
              return 0;
            });
            c.set_output(0, out);
          },
      .no_gradient = kIdsNoGradient,
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({3})}, {kBoundaries(std::vector<double>{0.8, 1.2})}, false};
          },
  };
  return op;
}

// ---- VocabularyLookup ---------------------------------------------------------------------

// The hash table of one lookup node, built on first use in each Session.
class VocabularyTable : public Resource {
 public:
  std::once_flag built;
  std::unordered_map<std::string, int64_t> strings;
  std::unordered_map<int64_t, int64_t> ints;
};

VocabularyTable& TableFor(KernelContext& c) {
  auto* table =
      c.resources().LookupOrCreate<VocabularyTable>("vocabulary_table:" + c.node().name());
  std::call_once(table->built, [&] {
    if (c.find_attr(kStringVocabulary) != nullptr) {
      const auto& vocab = c.attr(kStringVocabulary);
      for (size_t i = 0; i < vocab.size(); ++i) table->strings.emplace(vocab[i], i);
    } else {
      const auto& vocab = c.attr(kIntVocabulary);
      for (size_t i = 0; i < vocab.size(); ++i) table->ints.emplace(vocab[i], i);
    }
  });
  return *table;
}

const OpDef& VocabularyLookupOp() {
  static const OpDef op = {
      .name = "VocabularyLookup",
      .num_inputs = 1,
      .attrs = {kStringVocabulary.Optional(), kIntVocabulary.Optional(), kNumOovBuckets.Default(0),
                kDefaultValue.Default(-1), kStrict.Default(false), kErrorContext.Default("")},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            const bool strings = c.find_attr(kStringVocabulary) != nullptr;
            if (strings == (c.find_attr(kIntVocabulary) != nullptr)) {
              c.Fail("needs exactly one of string_vocabulary and int_vocabulary");
            }
            if (strings) {
              if (c.input_dtype(0) != kString) {
                c.Fail("the vocabulary holds strings but the keys are ",
                       DTypeName(c.input_dtype(0)));
              }
            } else if (!IsIntegerKey(c.input_dtype(0))) {
              c.Fail("the vocabulary holds integers but the keys are ", DTypeName(c.input_dtype(0)),
                     " (int32 or int64 needed)");
            }
            c.set_output(0, kInt64, c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& keys = c.input(0);
            VocabularyTable& table = TableFor(c);
            const bool is_string = c.find_attr(kStringVocabulary) != nullptr;
            const int64_t size = is_string ? static_cast<int64_t>(table.strings.size())
                                           : static_cast<int64_t>(table.ints.size());
            const int64_t num_oov = c.attr(kNumOovBuckets);
            const int64_t default_value = c.attr(kDefaultValue);
            const bool strict = c.attr(kStrict);
            Tensor out = c.AllocateOutput(0, keys.shape());
            int64_t* o = out.data<int64_t>();
            for (int64_t i = 0; i < keys.NumElements(); ++i) {
              if (IsPadding(keys, i)) {
                o[i] = -1;
                continue;
              }
              int64_t id = -1;
              if (is_string) {
                auto it = table.strings.find(keys.data<std::string>()[i]);
                if (it != table.strings.end()) id = it->second;
              } else {
                auto it = table.ints.find(IntKey(keys, i));
                if (it != table.ints.end()) id = it->second;
              }
              if (id < 0) {
                if (strict) {
                  std::string key = is_string ? "'" + keys.data<std::string>()[i] + "'"
                                              : std::to_string(IntKey(keys, i));
                  throw InvalidArgument(c.attr(kErrorContext), ": ", key,
                                        " is not in the vocabulary of ", size, " entries");
                }
                id = num_oov > 0 ? size + static_cast<int64_t>(KeyHash(keys, i) % num_oov)
                                 : default_value;
              }
              o[i] = id;
            }
            c.set_output(0, out);
          },
      .no_gradient = kIdsNoGradient,
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<std::string>({"a", "c"})},
                {kStringVocabulary(std::vector<std::string>{"a", "b"}), kNumOovBuckets(1)}};
          },
  };
  return op;
}

// ---- HashBucket, FingerprintKeys ------------------------------------------------------------

const OpDef& HashBucketOp() {
  static const OpDef op = {
      .name = "HashBucket",
      .num_inputs = 1,
      .attrs = {kNumBuckets.Required()},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape = KeysShape,
      .kernel =
          [](KernelContext& c) {
            const Tensor& keys = c.input(0);
            const uint64_t n = static_cast<uint64_t>(c.attr(kNumBuckets));
            Tensor out = c.AllocateOutput(0, keys.shape());
            int64_t* o = out.data<int64_t>();
            for (int64_t i = 0; i < keys.NumElements(); ++i) {
              o[i] = IsPadding(keys, i) ? -1 : static_cast<int64_t>(KeyHash(keys, i) % n);
            }
            c.set_output(0, out);
          },
      .no_gradient = kIdsNoGradient,
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<std::string>({"a", "b"})}, {kNumBuckets(4)}};
          },
  };
  return op;
}

const OpDef& FingerprintKeysOp() {
  static const OpDef op = {
      .name = "FingerprintKeys",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape = KeysShape,
      .kernel =
          [](KernelContext& c) {
            const Tensor& keys = c.input(0);
            Tensor out = c.AllocateOutput(0, keys.shape());
            int64_t* o = out.data<int64_t>();
            for (int64_t i = 0; i < keys.NumElements(); ++i) {
              o[i] = IsPadding(keys, i)
                         ? -1
                         : static_cast<int64_t>(KeyHash(keys, i) & 0x7fffffffffffffffULL);
            }
            c.set_output(0, out);
          },
      .no_gradient = kIdsNoGradient,
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<std::string>({"a", "b"})}, {}};
          },
  };
  return op;
}

// ---- CheckLabelRange ------------------------------------------------------------------------

// Passes labels through unchanged (the same buffer) after checking every value lies in
// [0, max_label] or [0, max_label); NaN fails too (TF's _assert_range).
const OpDef& CheckLabelRangeOp() {
  static const OpDef op = {
      .name = "CheckLabelRange",
      .num_inputs = 1,
      .attrs = {kMaxLabel.Required(), kExclusive.Required(), kContext.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(0)); },
      .kernel =
          [](KernelContext& c) {
            const Tensor& labels = c.input(0);
            const double hi = c.attr(kMaxLabel);
            const bool exclusive = c.attr(kExclusive);
            SwitchNumeric(labels.dtype(), "CheckLabelRange", [&](auto tag) {
              using T = decltype(tag);
              const T* v = labels.data<T>();
              for (int64_t i = 0; i < labels.NumElements(); ++i) {
                const double x = static_cast<double>(v[i]);
                if (!(x >= 0 && (exclusive ? x < hi : x <= hi))) {
                  std::string shown;
                  if constexpr (std::is_integral_v<T>) {
                    shown = StrCat(static_cast<int64_t>(v[i]));
                  } else {
                    shown = StrCat(x);
                  }
                  throw InvalidArgument(
                      c.attr(kContext), ": label ", shown, " at position ", i,
                      " is outside the valid range [0, ", hi, exclusive ? ")" : "]",
                      "; check the label column of the input (n_classes, or label_vocabulary "
                      "for string labels)");
                }
              }
              return 0;
            });
            c.set_output(0, labels);
          },
      .no_gradient = "labels are not differentiated",
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({0, 1})},
                            {kMaxLabel(2.0), kExclusive(true), kContext("labels")}};
          },
  };
  return op;
}

// ---- CheckIds -------------------------------------------------------------------------------

const OpDef& CheckIdsOp() {
  static const OpDef op = {
      .name = "CheckIds",
      .num_inputs = 1,
      .attrs = {kNumBuckets.Required(), kHasDefault.Required(), kDefaultValue.Required(),
                kContext.Required()},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.set_output(0, kInt64, c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& ids = c.input(0);
            const int64_t n = c.attr(kNumBuckets);
            const bool has_default = c.attr(kHasDefault);
            const int64_t default_value = c.attr(kDefaultValue);
            Tensor out = c.AllocateOutput(0, ids.shape());
            int64_t* o = out.data<int64_t>();
            for (int64_t i = 0; i < ids.NumElements(); ++i) {
              int64_t id = IntKey(ids, i);
              if (id != -1 && (id < 0 || id >= n)) {
                if (!has_default) {
                  throw InvalidArgument(c.attr(kContext), ": id ", id, " is outside [0, ", n,
                                        "); set default_value to map such ids to a bucket, "
                                        "or use -1 for a missing value");
                }
                id = default_value;
              }
              o[i] = id;
            }
            c.set_output(0, out);
          },
      .no_gradient = kIdsNoGradient,
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<int64_t>({0, 1})},
                {kNumBuckets(2), kHasDefault(false), kDefaultValue(-1), kContext("ids")}};
          },
  };
  return op;
}

// ---- CrossIds -------------------------------------------------------------------------------

// Inputs are viewed as [batch, k_i]; a rank-1 input has k_i = 1.
int64_t RowWidth(const Shape& s) { return s.rank() >= 2 ? s.dim(1) : 1; }

const OpDef& CrossIdsOp() {
  static const OpDef op = {
      .name = "CrossIds",
      .num_inputs = kVariadic,
      .attrs = {kHashBucketSize.Required(), kHashKey.Required()},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            if (c.num_inputs() < 2) c.Fail("needs at least two inputs to cross");
            int64_t batch = kUnknownDim;
            int64_t width = 1;
            for (int i = 0; i < c.num_inputs(); ++i) {
              c.ExpectDType(i, {kInt64});
              const Shape& s = c.input_shape(i);
              if (!s.rank_known()) {
                width = kUnknownDim;
                continue;
              }
              if (s.rank() != 1 && s.rank() != 2) {
                c.Fail("input ", i, " has shape ", s, "; crosses take [batch] or [batch, k]");
              }
              if (batch == kUnknownDim) batch = s.dim(0);
              int64_t k = RowWidth(s);
              width = (width == kUnknownDim || k == kUnknownDim) ? kUnknownDim : width * k;
            }
            c.set_output(0, kInt64, Shape{batch, width});
          },
      .kernel =
          [](KernelContext& c) {
            const int n = c.num_inputs();
            const int64_t batch = c.input(0).dim(0);
            std::vector<int64_t> widths(n);
            int64_t width = 1;
            for (int i = 0; i < n; ++i) {
              const Tensor& t = c.input(i);
              if (t.rank() < 1 || t.rank() > 2 || t.dim(0) != batch) {
                c.Fail("input ", i, " has shape ", t.shape(), "; expected [", batch, "] or [",
                       batch, ", k] like input 0");
              }
              widths[i] = t.rank() == 2 ? t.dim(1) : 1;
              width *= widths[i];
            }
            const uint64_t buckets = static_cast<uint64_t>(c.attr(kHashBucketSize));
            const uint64_t hash_key = static_cast<uint64_t>(c.attr(kHashKey));
            Tensor out = c.AllocateOutput(0, Shape{batch, width});
            int64_t* o = out.data<int64_t>();
            std::vector<int64_t> pos(n);
            for (int64_t r = 0; r < batch; ++r) {
              for (int64_t j = 0; j < width; ++j) {
                // Decompose j into one position per input, the last input varying fastest.
                int64_t rest = j;
                for (int i = n - 1; i >= 0; --i) {
                  pos[i] = rest % widths[i];
                  rest /= widths[i];
                }
                uint64_t h = hash_key;
                bool missing = false;
                for (int i = 0; i < n && !missing; ++i) {
                  int64_t id = c.input(i).data<int64_t>()[r * widths[i] + pos[i]];
                  if (id < 0) missing = true;
                  h = HashCombine(h, static_cast<uint64_t>(id));
                }
                o[r * width + j] = missing ? -1 : static_cast<int64_t>(h % buckets);
              }
            }
            c.set_output(0, out);
          },
      .no_gradient = kIdsNoGradient,
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<int64_t>({0, 1}), Tensor::FromVector<int64_t>({1, 0})},
                {kHashBucketSize(5), kHashKey(7)}};
          },
  };
  return op;
}

// ---- IdsToStrings ---------------------------------------------------------------------------

const OpDef& IdsToStringsOp() {
  static const OpDef op = {
      .name = "IdsToStrings",
      .num_inputs = 1,
      .attrs = {kVocabulary.Required()},
      .output_dtypes = {DTypeRule::Fixed(kString)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.set_output(0, kString, c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& ids = c.input(0);
            const std::vector<std::string> vocab = c.attr(kVocabulary);
            Tensor out = c.AllocateOutput(0, ids.shape());
            std::string* o = out.data<std::string>();
            for (int64_t i = 0; i < ids.NumElements(); ++i) {
              int64_t id = IntKey(ids, i);
              if (vocab.empty()) {
                o[i] = std::to_string(id);
              } else if (id < 0 || id >= static_cast<int64_t>(vocab.size())) {
                c.Fail("id ", id, " is outside the vocabulary of ", vocab.size(), " entries");
              } else {
                o[i] = vocab[id];
              }
            }
            c.set_output(0, out);
          },
      .no_gradient = "its output is strings",
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({0, 1})},
                            {kVocabulary(std::vector<std::string>{"a", "b"})}};
          },
  };
  return op;
}

}  // namespace

uint64_t FeatureHash64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (unsigned char ch : bytes) {
    h ^= ch;
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  return Fmix64(h);
}

uint64_t HashCombine(uint64_t seed, uint64_t value) {
  return Fmix64(seed ^ (Fmix64(value) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

Output Bucketize(const Scope& scope, Input x, const std::vector<double>& boundaries) {
  Output in = AsOutput(scope, x);
  return scope.AddNode(BucketizeOp(), {in}, {kBoundaries(boundaries)}, "Bucketize")->output(0);
}

namespace {
Output Lookup(const Scope& scope, Input keys, AttrMap attrs, const LookupOptions& options) {
  if (options.num_oov_buckets < 0) {
    throw InvalidArgument("VocabularyLookup: num_oov_buckets must be >= 0, got ",
                          options.num_oov_buckets);
  }
  attrs.Set(kNumOovBuckets(options.num_oov_buckets));
  attrs.Set(kDefaultValue(options.default_value));
  attrs.Set(kStrict(options.error_context.has_value()));
  attrs.Set(kErrorContext(options.error_context.value_or("")));
  Output in = AsOutput(scope, keys);
  return scope.AddNode(VocabularyLookupOp(), {in}, std::move(attrs), "VocabularyLookup")->output(0);
}
}  // namespace

Output VocabularyLookup(const Scope& scope, Input keys, const std::vector<std::string>& vocabulary,
                        const LookupOptions& options) {
  return Lookup(scope, keys, {kStringVocabulary(vocabulary)}, options);
}

Output VocabularyLookup(const Scope& scope, Input keys, const std::vector<int64_t>& vocabulary,
                        const LookupOptions& options) {
  return Lookup(scope, keys, {kIntVocabulary(vocabulary)}, options);
}

Output HashBucket(const Scope& scope, Input keys, int64_t num_buckets) {
  if (num_buckets <= 0) {
    throw InvalidArgument("HashBucket: num_buckets must be > 0, got ", num_buckets);
  }
  Output in = AsOutput(scope, keys);
  return scope.AddNode(HashBucketOp(), {in}, {kNumBuckets(num_buckets)}, "HashBucket")->output(0);
}

Output FingerprintKeys(const Scope& scope, Input keys) {
  Output in = AsOutput(scope, keys);
  return scope.AddNode(FingerprintKeysOp(), {in}, {}, "FingerprintKeys")->output(0);
}

Output CheckIds(const Scope& scope, Input ids, int64_t num_buckets,
                std::optional<int64_t> default_value, const std::string& context) {
  Output in = AsOutput(scope, ids);
  AttrMap attrs = {kNumBuckets(num_buckets), kHasDefault(default_value.has_value()),
                   kDefaultValue(default_value.value_or(-1)), kContext(context)};
  return scope.AddNode(CheckIdsOp(), {in}, std::move(attrs), "CheckIds")->output(0);
}

Output CheckLabelRange(const Scope& scope, Input labels, double max_label, bool exclusive,
                       const std::string& context) {
  Output in = AsOutput(scope, labels);
  const DType t = in.dtype();
  if (t != kFloat32 && t != kFloat64 && t != kInt32 && t != kInt64 && t != kUInt8) {
    throw InvalidArgument(context, ": labels must be numeric to check their range, got ",
                          DTypeName(in.dtype()));
  }
  AttrMap attrs = {kMaxLabel(max_label), kExclusive(exclusive), kContext(context)};
  return scope.AddNode(CheckLabelRangeOp(), {in}, std::move(attrs), "CheckLabelRange")->output(0);
}

Output CrossIds(const Scope& scope, const std::vector<Output>& ids, int64_t hash_bucket_size,
                uint64_t hash_key) {
  if (hash_bucket_size <= 0) {
    throw InvalidArgument("CrossIds: hash_bucket_size must be > 0, got ", hash_bucket_size);
  }
  AttrMap attrs = {kHashBucketSize(hash_bucket_size), kHashKey(static_cast<int64_t>(hash_key))};
  return scope.AddNode(CrossIdsOp(), ids, std::move(attrs), "CrossIds")->output(0);
}

Output IdsToStrings(const Scope& scope, Input ids, const std::vector<std::string>& vocabulary) {
  Output in = AsOutput(scope, ids);
  return scope.AddNode(IdsToStringsOp(), {in}, {kVocabulary(vocabulary)}, "IdsToStrings")
      ->output(0);
}

void RegisterFeatureColumnOps(OpRegistry& registry) {
  registry.Register(BucketizeOp());
  registry.Register(VocabularyLookupOp());
  registry.Register(HashBucketOp());
  registry.Register(FingerprintKeysOp());
  registry.Register(CheckIdsOp());
  registry.Register(CheckLabelRangeOp());
  registry.Register(CrossIdsOp());
  registry.Register(IdsToStringsOp());
}

}  // namespace loom::feature_column
