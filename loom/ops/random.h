#ifndef LOOM_OPS_RANDOM_H_
#define LOOM_OPS_RANDOM_H_

// Random-number ops (Dropout, which draws from the same streams, is in dropout.h).
//
//   Graph graph({.seed = 42});
//   Scope s(graph);
//   Variable w(s.WithOpName("w"), TruncatedNormal(s, {784, 10}, kFloat32, 0.0, 0.1));
//
// Seeding follows TF1 (tf.random.get_seed): with a graph seed g and an op seed o the op
// uses (g, o); with only g, (g, the op's node id), so rebuilding the same graph gives the
// same numbers; with only o, (87654321, o); with neither, a seed drawn from the OS when the
// Session first runs the op (nondeterministic).
// Each element's value depends only on (key, run, the element's index): a counter-based
// Philox4x32-10 generator, block b of run r being Philox(counter = (b, r), key), so results
// are identical whatever the thread count, and every Run draws new numbers. key is a hash
// of (seed, seed2) (drawn from the OS when unseeded); run counts how many times this
// Session ran the op before. Both live in a RandomStreamResource named
// kRandomStreamPrefix + node name, which the Saver writes into checkpoints and restores
// (SaveRandomStreams / RestoreRandomStream), so a resumed run draws exactly the numbers
// the uninterrupted one would have drawn (docs/training.md, "Exact resume").
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

inline constexpr std::string_view kRandomStreamPrefix = "random:";

// One random op's stream in one Session. Thread-safe (atomics); restored only between runs.
class RandomStreamResource : public Resource {
 public:
  explicit RandomStreamResource(uint64_t key) : key(key) {}
  std::atomic<uint64_t> key;
  std::atomic<uint64_t> runs{0};
};

// The checkpoint form of every random stream of `resources`: (resource name, int64 [2]
// holding {runs, key}), in name order. Streams of ops that never ran have no entry.
std::vector<std::pair<std::string, Tensor>> SaveRandomStreams(const ResourceMgr& resources);
// Restores a saved stream (`name` = kRandomStreamPrefix + node name) into `resources`.
// Returns false, restoring nothing, when `graph` has no random op of that name (a stream
// of another graph: e.g. an eval graph without dropout). A seeded op keeps the key of its
// current seeds (a changed seed takes effect) and resumes the run counter; an unseeded
// op resumes its saved key too. Throws DataLoss naming `origin` when `saved` is not an
// int64 [2].
bool RestoreRandomStream(ResourceMgr& resources, const Graph& graph, std::string_view name,
                         const Tensor& saved, std::string_view origin);

// Op seed meaning "none": take it from the graph seed (or nondeterministic).
inline constexpr int64_t kNoSeed = -1;

// Normal(mean, stddev) samples. dtype: float32 or float64. REQUIRES: fully defined shape.
Output RandomNormal(const Scope& scope, const Shape& shape, DType dtype = kFloat32,
                    double mean = 0.0, double stddev = 1.0, int64_t seed = kNoSeed);
// Normal samples redrawn until within two standard deviations of the mean (TF's
// truncated_normal, the usual weight initializer).
Output TruncatedNormal(const Scope& scope, const Shape& shape, DType dtype = kFloat32,
                       double mean = 0.0, double stddev = 1.0, int64_t seed = kNoSeed);
// Uniform samples in [minval, maxval). dtype: float32 or float64.
Output RandomUniform(const Scope& scope, const Shape& shape, DType dtype = kFloat32,
                     double minval = 0.0, double maxval = 1.0, int64_t seed = kNoSeed);
// The same with the shape an int32 / int64 vector known at run time (tf.shape(x)).
Output RandomUniform(const Scope& scope, Output shape, DType dtype = kFloat32, double minval = 0.0,
                     double maxval = 1.0, int64_t seed = kNoSeed);
// Uniform integers in [minval, maxval). dtype: int32 or int64. REQUIRES: minval < maxval.
Output RandomUniformInt(const Scope& scope, const Shape& shape, int64_t minval, int64_t maxval,
                        DType dtype = kInt64, int64_t seed = kNoSeed);

void RegisterRandomOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_RANDOM_H_
