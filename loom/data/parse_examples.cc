// ParseExamples: serialized tf.train.Example records -> named feature tensors, as a Map
// over a scalar record or over a batch of them (parsing a batch at once is the fast way:
// one pass builds each [batch, ...] output directly).
#include "loom/data/file_sources_internal.h"

namespace loom::data {
namespace {

constexpr const char* kParseStage = "ParseExamples";

std::string RowSplitsKey(const std::string& name) { return name + "_row_splits"; }

void CheckFeatureDType(const std::string& name, DType dtype) {
  CheckArg(dtype == kFloat32 || dtype == kInt64 || dtype == kString, kParseStage, "feature '", name,
           "' has dtype ", DTypeName(dtype), "; Example features are float32, int64 or string");
}

}  // namespace

ElementSpec ParsedExamplesSpec(const ElementSpec& input, const ExampleSpec& spec,
                               const std::string& record_key, const std::string& origin_key) {
  auto it = input.find(record_key);
  CheckArg(it != input.end(), kParseStage, "the input ", SpecString(input), " has no component '",
           record_key, "' (set ParseExamplesOptions::record_key)");
  const TensorSpec& rec = it->second;
  CheckArg(rec.dtype == kString && rec.shape.rank_known() && rec.shape.rank() <= 1, kParseStage,
           "component '", record_key, "' must be a scalar string or a [batch] string vector, not ",
           DTypeName(rec.dtype), rec.shape);
  CheckArg(!spec.fixed.empty() || !spec.var_len.empty(), kParseStage, "the ExampleSpec is empty");
  const bool batched = rec.shape.rank() == 1;
  const int64_t batch = batched ? rec.shape.dim(0) : 0;

  ElementSpec out = input;
  out.erase(record_key);
  if (!origin_key.empty()) {
    CheckArg(origin_key != record_key, kParseStage, "origin_key and record_key are both '",
             record_key, "'");
    auto origin = input.find(origin_key);
    CheckArg(origin != input.end() && origin->second.dtype == kString &&
                 origin->second.shape.rank_known() &&
                 origin->second.shape.rank() == rec.shape.rank(),
             kParseStage, "origin component '", origin_key, "' must be a string shaped like '",
             record_key, "' (", rec.shape, ") in ", SpecString(input),
             " (set TFRecordOptions::origin_key on the source)");
    out.erase(origin_key);
  }
  auto add = [&](const std::string& name, TensorSpec ts) {
    CheckArg(out.emplace(name, std::move(ts)).second, kParseStage, "output component '", name,
             "' clashes with another component of ", SpecString(input), " or of the spec");
  };
  for (const auto& [name, f] : spec.fixed) {
    CheckFeatureDType(name, f.dtype);
    CheckArg(f.shape.fully_defined(), kParseStage, "fixed feature '", name, "' needs a fully ",
             "defined shape, not ", f.shape);
    add(name, {f.dtype, batched ? f.shape.WithLeadingDim(batch) : f.shape});
  }
  for (const auto& [name, f] : spec.var_len) {
    CheckFeatureDType(name, f.dtype);
    if (f.output == VarLenOutput::kPadded) {
      add(name, {f.dtype, batched ? Shape{batch, kUnknownDim} : Shape{kUnknownDim}});
    } else {
      add(name, {f.dtype, Shape{kUnknownDim}});
      add(RowSplitsKey(name), {kInt64, Shape{batched ? (batch < 0 ? kUnknownDim : batch + 1) : 2}});
    }
  }
  return out;
}

Element ParseExamplesInElement(const Element& element, const ExampleSpec& spec,
                               const std::string& record_key, const std::string& origin_key) {
  auto it = element.find(record_key);
  if (it == element.end())
    throw InvalidArgument(kParseStage, ": the element has no component '", record_key, "'");
  const Tensor& records = it->second;
  if (records.dtype() != kString || records.rank() > 1) {
    throw InvalidArgument(kParseStage, ": component '", record_key, "' must be string scalar or ",
                          "vector, not ", DTypeName(records.dtype()), records.shape());
  }
  const Tensor* origins = nullptr;
  if (!origin_key.empty()) {
    auto o = element.find(origin_key);
    if (o == element.end() || o->second.dtype() != kString ||
        o->second.NumElements() != records.NumElements()) {
      throw InvalidArgument(kParseStage, ": origin component '", origin_key,
                            "' is missing or does not "
                            "name each of the ",
                            records.NumElements(), " records");
    }
    origins = &o->second;
  }
  ParsedFeatures parsed =
      records.rank() == 0
          ? ParseExample(records.scalar<std::string>(), spec,
                         origins ? std::string_view(origins->scalar<std::string>()) : "the record")
          : ParseExampleBatch(
                records.flat<std::string>(), spec,
                origins ? origins->flat<std::string>() : std::span<const std::string>());
  Element out = element;
  out.erase(record_key);
  if (origins) out.erase(origin_key);
  for (auto& [name, feature] : parsed) {
    out[name] = std::move(feature.values);
    if (feature.row_splits.defined()) out[RowSplitsKey(name)] = std::move(feature.row_splits);
  }
  return out;
}

Dataset ParseExamples(const Dataset& input, ExampleSpec spec, const ParseExamplesOptions& options) {
  ElementSpec out_spec =
      ParsedExamplesSpec(input.spec(), spec, options.record_key, options.origin_key);
  auto shared = std::make_shared<const ExampleSpec>(std::move(spec));
  std::string key = options.record_key, origin = options.origin_key;
  return input.Map(
      [shared, key, origin](const Element& e) {
        return ParseExamplesInElement(e, *shared, key, origin);
      },
      {.num_parallel_calls = options.num_parallel_calls, .output_spec = std::move(out_spec)});
}

}  // namespace loom::data
