#include "loom/ops/random.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"
#include "loom/ops/attr_keys.h"
#include "loom/ops/philox.h"
#include "loom/ops/random_internal.h"

namespace loom {
namespace {

using op_attrs::kDType;
using op_attrs::kShape;
using random_internal::FillBlocks;
using random_internal::kRandomNoGradient;
using random_internal::kSeed;
using random_internal::kSeed2;
using random_internal::NextStream;
using random_internal::OpSeeds;
using random_internal::Stream;
inline constexpr Attr<double> kMinval{"minval"};
inline constexpr Attr<double> kMaxval{"maxval"};
inline constexpr Attr<int64_t> kIntMinval{"minval"};  // RandomUniformInt
inline constexpr Attr<int64_t> kIntMaxval{"maxval"};
inline constexpr Attr<double> kMean{"mean"};
inline constexpr Attr<double> kStddev{"stddev"};

constexpr int64_t kDefaultGraphSeed = 87654321;  // TF's DEFAULT_GRAPH_SEED

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t SeededKey(int64_t seed, int64_t seed2) {
  return SplitMix64(SplitMix64(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(seed2));
}

// The key a fresh stream of an op starts with: from its seeds, or from the OS when it
// has none (seed = seed2 = 0).
uint64_t InitialKey(const Node& node) {
  const int64_t seed = node.attr(kSeed), seed2 = node.attr(kSeed2);
  if (seed != 0 || seed2 != 0) return SeededKey(seed, seed2);
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

bool Seeded(const Node& node) { return node.attr(kSeed) != 0 || node.attr(kSeed2) != 0; }

RandomStreamResource* StreamOf(ResourceMgr& resources, const Node& node) {
  return resources.LookupOrCreate<RandomStreamResource>(
      StrCat(kRandomStreamPrefix, node.name()),
      [&] { return std::make_unique<RandomStreamResource>(InitialKey(node)); });
}

// Box-Muller: two independent uniforms in (0, 1] and [0, 1) -> two standard normals.
inline void BoxMuller(double u1, double u2, double* z0, double* z1) {
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  *z0 = r * std::cos(theta);
  *z1 = r * std::sin(theta);
}
// (0, 1] from 32 bits, for log().
inline double OpenUnit32(uint32_t x) { return (static_cast<double>(x >> 8) + 1.0) * 0x1.0p-24; }
inline double OpenUnit64(uint32_t hi, uint32_t lo) { return 1.0 - philox::ToDouble(hi, lo); }

// Standard normals from one block: 4 for float (24-bit uniforms), 2 for double.
template <typename T>
int NormalsFromBlock(const philox::Block& x, double* z) {
  if constexpr (std::is_same_v<T, float>) {
    BoxMuller(OpenUnit32(x[0]), philox::ToFloat(x[1]), &z[0], &z[1]);
    BoxMuller(OpenUnit32(x[2]), philox::ToFloat(x[3]), &z[2], &z[3]);
    return 4;
  } else {
    BoxMuller(OpenUnit64(x[0], x[1]), philox::ToDouble(x[2], x[3]), &z[0], &z[1]);
    return 2;
  }
}

void RandomShape(InferenceContext& c) {
  const Shape& shape = c.attr(kShape);
  if (!shape.fully_defined()) c.Fail("shape ", shape, " must be fully defined");
  c.set_output(0, c.attr(kDType), shape);
}

void FloatOnly(InferenceContext& c) {
  DType dtype = c.attr(kDType);
  if (!IsFloating(dtype)) c.Fail("dtype must be float32 or float64, got ", DTypeName(dtype));
  RandomShape(c);
}

// The record of a float random op: no inputs, a fully defined `shape`, a float `dtype`,
// the distribution's two parameters and the seeds. Fill{}(c, stream, out, n) writes the
// n values of the run's tensor of T (float or double).
template <typename Fill>
OpDef FloatRandomOp(const std::string& name, AttrDef param1, AttrDef param2, DType sample_dtype) {
  return {
      .name = name,
      .num_inputs = 0,
      .stateful = true,
      .attrs = {kShape.Required(), kDType.Required(), std::move(param1), std::move(param2),
                kSeed.Default(0), kSeed2.Default(0)},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape = FloatOnly,
      .kernel =
          [](KernelContext& c) {
            Tensor y = c.AllocateOutput(0, c.attr(kShape));
            const Stream stream = NextStream(c);
            SwitchFloat(y.dtype(), c.node().op(), [&](auto tag) {
              using T = decltype(tag);
              Fill{}(c, stream, y.data<T>(), y.NumElements());
              return 0;
            });
          },
      .no_gradient = kRandomNoGradient,
      .sample =
          [sample_dtype] {
            return OpSample{{}, {kShape(Shape{2, 3}), kDType(sample_dtype), kSeed(1)}};
          },
  };
}

// minval + (maxval - minval) * u, u uniform in [0, 1).
struct UniformFill {
  template <typename T>
  void operator()(KernelContext& c, const Stream& stream, T* out, int64_t size) const {
    const double lo = c.attr(kMinval), span = c.attr(kMaxval) - lo;
    const T tlo = static_cast<T>(lo), tspan = static_cast<T>(span);
    if constexpr (std::is_same_v<T, float>) {
      FillBlocks(c, stream, size, 4, [&](const philox::Block& x, int64_t first, int64_t n) {
        for (int64_t k = 0; k < n; ++k) out[first + k] = tlo + tspan * philox::ToFloat(x[k]);
      });
    } else {
      FillBlocks(c, stream, size, 2, [&](const philox::Block& x, int64_t first, int64_t n) {
        for (int64_t k = 0; k < n; ++k)
          out[first + k] = tlo + tspan * philox::ToDouble(x[2 * k], x[2 * k + 1]);
      });
    }
  }
};

// mean + stddev * z, z standard normal (Box-Muller over one block per 4 floats / 2 doubles).
struct NormalFill {
  template <typename T>
  void operator()(KernelContext& c, const Stream& stream, T* out, int64_t size) const {
    const double mean = c.attr(kMean), stddev = c.attr(kStddev);
    const int per_block = std::is_same_v<T, float> ? 4 : 2;
    FillBlocks(c, stream, size, per_block, [&](const philox::Block& x, int64_t first, int64_t n) {
      double z[4] = {};  // NormalsFromBlock fills per_block >= n of them
      NormalsFromBlock<T>(x, z);
      for (int64_t k = 0; k < n; ++k) out[first + k] = static_cast<T>(mean + stddev * z[k]);
    });
  }
};

// mean + stddev * z, z standard normal redrawn until |z| <= 2.
struct TruncatedNormalFill {
  template <typename T>
  void operator()(KernelContext& c, const Stream& stream, T* out, int64_t size) const {
    const double mean = c.attr(kMean), stddev = c.attr(kStddev);
    // Element i has its own sub-stream (block i, attempt a), so rejection never shifts
    // other elements' numbers. P(a block has no sample within 2 sigma) is 0.0455^2 for
    // double, 0.0455^4 for float.
    c.pool().ParallelFor(size, 1024, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double value = 0;
        for (uint32_t attempt = 0;; ++attempt) {
          double z[4];
          const int count = NormalsFromBlock<T>(stream.At(i, attempt), z);
          int k = 0;
          while (k < count && std::abs(z[k]) > 2.0) ++k;
          if (k < count) {
            value = z[k];
            break;
          }
        }
        out[i] = static_cast<T>(mean + stddev * value);
      }
    });
  }
};

const OpDef& RandomUniformOp() {
  static const OpDef op = FloatRandomOp<UniformFill>("RandomUniform", kMinval.Default(0.0),
                                                     kMaxval.Default(1.0), kFloat64);
  return op;
}

// RandomUniform whose shape is an int32 / int64 vector input, known only at run time (TF's
// RandomUniform(tf.shape(x)) in dropout). Same stream and values as RandomUniform for the
// same seeds and shape.
const OpDef& RandomUniformDynamicOp() {
  static const OpDef op = {
      .name = "RandomUniformDynamic",
      .num_inputs = 1,
      .stateful = true,
      .attrs = {kDType.Required(), kMinval.Default(0.0), kMaxval.Default(1.0), kSeed.Default(0),
                kSeed2.Default(0)},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.ExpectRank(0, 1);
            const DType dtype = c.attr(kDType);
            if (!IsFloating(dtype))
              c.Fail("dtype must be float32 or float64, got ", DTypeName(dtype));
            c.set_output(0, dtype, StaticShapeValue(c.input(0)));
          },
      .kernel =
          [](KernelContext& c) {
            Tensor y =
                c.AllocateOutput(0, Shape(array_internal::DimsFromTensor(c, c.input(0), "shape")));
            const Stream stream = NextStream(c);
            SwitchFloat(y.dtype(), c.node().op(), [&](auto tag) {
              using T = decltype(tag);
              UniformFill{}(c, stream, y.data<T>(), y.NumElements());
              return 0;
            });
          },
      .no_gradient = kRandomNoGradient,
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<int64_t>({2, 3})}, {kDType(kFloat64), kSeed(1)}, false};
          },
  };
  return op;
}

const OpDef& RandomNormalOp() {
  static const OpDef op =
      FloatRandomOp<NormalFill>("RandomNormal", kMean.Default(0.0), kStddev.Default(1.0), kFloat32);
  return op;
}

const OpDef& TruncatedNormalOp() {
  static const OpDef op = FloatRandomOp<TruncatedNormalFill>("TruncatedNormal", kMean.Default(0.0),
                                                             kStddev.Default(1.0), kFloat32);
  return op;
}

const OpDef& RandomUniformIntOp() {
  static const OpDef op = {
      .name = "RandomUniformInt",
      .num_inputs = 0,
      .stateful = true,
      .attrs = {kShape.Required(), kDType.Required(), kIntMinval.Required(), kIntMaxval.Required(),
                kSeed.Default(0), kSeed2.Default(0)},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape =
          [](InferenceContext& c) {
            DType dtype = c.attr(kDType);
            if (dtype != kInt32 && dtype != kInt64) {
              c.Fail("dtype must be int32 or int64, got ", DTypeName(dtype));
            }
            const int64_t lo = c.attr(kIntMinval), hi = c.attr(kIntMaxval);
            if (lo >= hi) c.Fail("minval ", lo, " must be less than maxval ", hi);
            if (dtype == kInt32 && (lo < INT32_MIN || hi - 1 > INT32_MAX)) {
              c.Fail("[", lo, ", ", hi, ") does not fit int32");
            }
            RandomShape(c);
          },
      .kernel =
          [](KernelContext& c) {
            Tensor y = c.AllocateOutput(0, c.attr(kShape));
            const int64_t lo = c.attr(kIntMinval);
            const uint64_t range =
                static_cast<uint64_t>(c.attr(kIntMaxval)) - static_cast<uint64_t>(lo);
            const Stream stream = NextStream(c);
            auto fill = [&](auto* out) {
              using T = std::remove_pointer_t<decltype(out)>;
              // Modulo reduction, like TF; the bias is below range / 2^32 (2^64 for wide).
              if (range <= (uint64_t{1} << 32)) {
                FillBlocks(c, stream, y.NumElements(), 4,
                           [&](const philox::Block& x, int64_t first, int64_t n) {
                             for (int64_t k = 0; k < n; ++k)
                               out[first + k] =
                                   static_cast<T>(lo + static_cast<int64_t>(x[k] % range));
                           });
              } else {
                FillBlocks(c, stream, y.NumElements(), 2,
                           [&](const philox::Block& x, int64_t first, int64_t n) {
                             for (int64_t k = 0; k < n; ++k) {
                               const uint64_t bits =
                                   (static_cast<uint64_t>(x[2 * k]) << 32) | x[2 * k + 1];
                               out[first + k] =
                                   static_cast<T>(static_cast<uint64_t>(lo) + bits % range);
                             }
                           });
              }
            };
            if (y.dtype() == kInt32)
              fill(y.data<int32_t>());
            else
              fill(y.data<int64_t>());
          },
      .no_gradient = kRandomNoGradient,
      .sample =
          [] {
            return OpSample{{}, {kShape(Shape{4}), kDType(kInt32), kIntMinval(0), kIntMaxval(5)}};
          },
  };
  return op;
}

Output AddRandom(const Scope& scope, const OpDef& op, const Shape& shape, DType dtype,
                 int64_t op_seed, AttrMap attrs) {
  if (!shape.fully_defined()) {
    throw InvalidArgument(op.name, " '", scope.FullName(op.name), "': shape ", shape,
                          " must be fully defined");
  }
  auto [seed, seed2] = OpSeeds(scope, op_seed);
  attrs.Set(kShape(shape));
  attrs.Set(kDType(dtype));
  attrs.Set(kSeed(seed));
  attrs.Set(kSeed2(seed2));
  return scope.AddNode(op, {}, std::move(attrs), op.name)->output(0);
}

}  // namespace

namespace random_internal {

Stream NextStream(KernelContext& c) {
  RandomStreamResource* state = StreamOf(c.resources(), c.node());
  const uint64_t key = state->key.load();
  return {{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)}, state->runs.fetch_add(1)};
}

std::pair<int64_t, int64_t> OpSeeds(const Scope& scope, int64_t op_seed) {
  const int64_t graph_seed = scope.graph().seed();
  int64_t seed = 0, seed2 = 0;
  if (graph_seed >= 0) {
    seed = graph_seed;
    seed2 = op_seed >= 0 ? op_seed : scope.graph().num_nodes();
  } else if (op_seed >= 0) {
    seed = kDefaultGraphSeed;
    seed2 = op_seed;
  } else {
    return {0, 0};
  }
  if (seed == 0 && seed2 == 0) seed2 = INT32_MAX;  // (0, 0) would mean "no seed"
  return {seed, seed2};
}

}  // namespace random_internal

Output RandomNormal(const Scope& scope, const Shape& shape, DType dtype, double mean, double stddev,
                    int64_t seed) {
  return AddRandom(scope, RandomNormalOp(), shape, dtype, seed, {kMean(mean), kStddev(stddev)});
}

Output TruncatedNormal(const Scope& scope, const Shape& shape, DType dtype, double mean,
                       double stddev, int64_t seed) {
  return AddRandom(scope, TruncatedNormalOp(), shape, dtype, seed, {kMean(mean), kStddev(stddev)});
}

Output RandomUniform(const Scope& scope, const Shape& shape, DType dtype, double minval,
                     double maxval, int64_t seed) {
  return AddRandom(scope, RandomUniformOp(), shape, dtype, seed,
                   {kMinval(minval), kMaxval(maxval)});
}

Output RandomUniform(const Scope& scope, Output shape, DType dtype, double minval, double maxval,
                     int64_t seed) {
  auto [seed1, seed2] = OpSeeds(scope, seed);
  return scope
      .AddNode(RandomUniformDynamicOp(), {shape},
               {kDType(dtype), kMinval(minval), kMaxval(maxval), kSeed(seed1), kSeed2(seed2)},
               "RandomUniform")
      ->output(0);
}

Output RandomUniformInt(const Scope& scope, const Shape& shape, int64_t minval, int64_t maxval,
                        DType dtype, int64_t seed) {
  return AddRandom(scope, RandomUniformIntOp(), shape, dtype, seed,
                   {kIntMinval(minval), kIntMaxval(maxval)});
}

namespace {
bool IsRandomOp(const Node& node) {
  for (const OpDef* op : {&RandomUniformOp(), &RandomUniformDynamicOp(), &RandomNormalOp(),
                          &TruncatedNormalOp(), &RandomUniformIntOp()}) {
    if (&node.op_def() == op) return true;
  }
  return random_internal::IsDropoutOp(node);
}
}  // namespace

std::vector<std::pair<std::string, Tensor>> SaveRandomStreams(const ResourceMgr& resources) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const std::string& name : resources.Names()) {
    if (!name.starts_with(kRandomStreamPrefix)) continue;
    const auto* stream = resources.Lookup<RandomStreamResource>(name);
    if (stream == nullptr) continue;
    const uint64_t state[2] = {stream->runs.load(), stream->key.load()};
    Tensor t(kInt64, Shape{2});
    std::memcpy(t.raw_data(), state, sizeof(state));
    out.emplace_back(name, std::move(t));
  }
  return out;
}

bool RestoreRandomStream(ResourceMgr& resources, const Graph& graph, std::string_view name,
                         const Tensor& saved, std::string_view origin) {
  if (!name.starts_with(kRandomStreamPrefix)) return false;
  const Node* node = graph.FindNode(name.substr(kRandomStreamPrefix.size()));
  if (node == nullptr || !IsRandomOp(*node)) return false;
  if (saved.dtype() != kInt64 || saved.shape() != Shape{2}) {
    throw DataLoss("random stream '", name, "' in '", origin, "' is ", DTypeName(saved.dtype()),
                   saved.shape(), "; a random stream is saved as int64 [2] {runs, key}");
  }
  uint64_t state[2];
  std::memcpy(state, saved.raw_data(), sizeof(state));
  RandomStreamResource* stream = StreamOf(resources, *node);
  stream->runs.store(state[0]);
  if (!Seeded(*node)) stream->key.store(state[1]);
  return true;
}

void RegisterRandomOps(OpRegistry& registry) {
  for (const OpDef* op : {&RandomUniformOp(), &RandomUniformDynamicOp(), &RandomNormalOp(),
                          &TruncatedNormalOp(), &RandomUniformIntOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
