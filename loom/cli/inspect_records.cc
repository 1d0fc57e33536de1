// `loom inspect` on TFRecord and event files: read every frame, checking both CRCs, and
// say so when the file is damaged instead of stopping quietly at the damage.
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/base/error.h"
#include "loom/cli/inspect_internal.h"
#include "loom/io/event_file_proto.h"
#include "loom/io/proto/example.pb.h"
#include "loom/io/record_reader.h"

namespace loom::cli {
namespace {

std::string CompressionSuffix(Compression c) {
  return c == Compression::kGzip ? " (gzip)" : c == Compression::kZlib ? " (zlib)" : "";
}

std::string FeatureString(const proto::Feature& f) {
  auto list = [](const auto& values, auto fmt) {
    std::string s = "[";
    int n = 0;
    for (const auto& v : values) {
      if (n == 8) {
        s += ", ...";
        break;
      }
      s += (n++ ? ", " : "") + fmt(v);
    }
    return s + "]";
  };
  if (f.has_float_list())
    return "float[" + std::to_string(f.float_list().value_size()) + "] " +
           list(f.float_list().value(), [](float v) {
             char b[32];
             std::snprintf(b, 32, "%g", v);
             return std::string(b);
           });
  if (f.has_int64_list())
    return "int64[" + std::to_string(f.int64_list().value_size()) + "] " +
           list(f.int64_list().value(), [](int64_t v) { return std::to_string(v); });
  if (f.has_bytes_list())
    return "bytes[" + std::to_string(f.bytes_list().value_size()) + "] " +
           list(f.bytes_list().value(), [](const std::string& v) {
             std::string s = v.substr(0, 40);
             for (char& c : s)
               if (c < 32 || c > 126) c = '.';
             return "\"" + s + (v.size() > 40 ? "...\"" : "\"");
           });
  return "empty";
}

void PrintFeatures(const proto::Features& features, const char* indent) {
  for (const auto& [name, f] : std::map(features.feature().begin(), features.feature().end()))
    std::printf("%s%-30s %s\n", indent, name.c_str(), FeatureString(f).c_str());
}

// A SequenceExample's feature lists: each list's length and its first steps.
void PrintFeatureLists(const proto::FeatureLists& lists) {
  for (const auto& [name, list] :
       std::map(lists.feature_list().begin(), lists.feature_list().end())) {
    std::string steps;
    for (int i = 0; i < list.feature_size() && i < 3; ++i)
      steps += (i ? "; " : "") + FeatureString(list.feature(i));
    if (list.feature_size() > 3) steps += "; ...";
    std::printf("    %-28s %d steps: %s\n", name.c_str(), list.feature_size(), steps.c_str());
  }
}

// Prints the error that stopped the reading: "truncated: ..." for a file cut short (the
// record reader's "truncated record at offset N ..."), else "damaged: ...".
void PrintDamage(const std::optional<std::string>& damage) {
  if (!damage) return;
  const bool cut_short = damage->find("truncated") != std::string::npos;
  std::printf("%s: %s\n", cut_short ? "truncated" : "damaged", damage->c_str());
}

// The damage found while reading, as one DataLoss, or nothing.
void ThrowIfDamaged(const std::string& path, const std::optional<std::string>& damage,
                    uint64_t corrupt) {
  if (!damage && corrupt == 0) return;
  std::string what;
  if (corrupt > 0) what = StrCat(corrupt, " record(s) failed their CRC check and were skipped");
  if (damage) {
    const bool cut_short = damage->find("truncated") != std::string::npos;
    what += StrCat(what.empty() ? "" : "; ", cut_short ? "it is truncated: " : "", *damage);
  }
  throw DataLoss("'", path, "' is damaged: ", what, " (what could be read is shown above)");
}

}  // namespace

void InspectRecords(Env* env, const std::string& path, Compression compression, int show) {
  auto reader = RecordReader::Open(
      env, path,
      {.compression = compression, .skip_corrupt_records = true, .truncated_record_is_eof = false});
  std::string record;
  std::vector<uint64_t> corrupt_at;
  std::optional<std::string> damage;
  int64_t examples = 0, sequence_examples = 0, other = 0, shown = 0;
  uint64_t bytes = 0;
  for (;;) {
    const uint64_t at = reader->offset();
    const uint64_t corrupt_before = reader->corrupt_records();
    try {
      if (!reader->ReadRecord(&record)) break;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kDataLoss) throw;
      damage = e.message();
      break;
    }
    if (reader->corrupt_records() > corrupt_before) corrupt_at.push_back(at);
    bytes += record.size();
    // A SequenceExample read as an Example shows its context and drops its feature lists
    // (field 2), so try it first; an Example has no field 2.
    proto::SequenceExample sequence;
    proto::Example example;
    bool is_sequence = false;
    if (sequence.ParseFromString(record) && sequence.feature_lists().feature_list_size() > 0) {
      ++sequence_examples;
      is_sequence = true;
    } else if (example.ParseFromString(record) && !example.features().feature().empty()) {
      ++examples;
    } else {
      ++other;
      continue;
    }
    if (shown >= show) continue;
    std::printf("record %lld (offset %llu): %s\n",
                static_cast<long long>(reader->records_read() - 1),
                static_cast<unsigned long long>(at),
                is_sequence ? "tf.train.SequenceExample" : "tf.train.Example");
    if (!is_sequence) {
      PrintFeatures(example.features(), "  ");
    } else {
      std::printf("  context:\n");
      PrintFeatures(sequence.context(), "    ");
      std::printf("  feature_lists:\n");
      PrintFeatureLists(sequence.feature_lists());
    }
    ++shown;
  }
  std::printf("TFRecord file %s%s\n", path.c_str(), CompressionSuffix(compression).c_str());
  std::printf(
      "records: %llu (%llu payload bytes), tf.train.Example: %lld, "
      "tf.train.SequenceExample: %lld, other: %lld\n",
      static_cast<unsigned long long>(reader->records_read()),
      static_cast<unsigned long long>(bytes), static_cast<long long>(examples),
      static_cast<long long>(sequence_examples), static_cast<long long>(other));
  std::printf("corrupt records skipped: %llu\n",
              static_cast<unsigned long long>(reader->corrupt_records()));
  for (uint64_t at : corrupt_at)
    std::printf("  corrupt record after offset %llu\n", static_cast<unsigned long long>(at));
  PrintDamage(damage);
  ThrowIfDamaged(path, damage, reader->corrupt_records());
}

void InspectEvents(Env* env, const std::string& path, Compression compression) {
  auto records = RecordReader::Open(
      env, path,
      {.compression = compression, .skip_corrupt_records = true, .truncated_record_is_eof = false});
  RecordReader* raw = records.get();
  EventFileReader reader(std::move(records));
  struct TagInfo {
    int64_t count = 0;
    int64_t last_step = 0;
    std::optional<double> last_value;
  };
  std::map<std::string, TagInfo> tags;
  std::set<int64_t> steps;
  int64_t events = 0, graphs = 0;
  std::optional<std::string> damage;
  for (;;) {
    std::optional<proto::Event> event;
    try {
      event = reader.Next();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kDataLoss) throw;
      damage = e.message();
      break;
    }
    if (!event) break;
    ++events;
    if (event->has_summary()) {
      steps.insert(event->step());
      for (const auto& value : event->summary().value()) {
        TagInfo& info = tags[value.tag()];
        ++info.count;
        info.last_step = event->step();
        if (auto v = ScalarValue(value)) info.last_value = *v;
      }
    }
    if (!event->graph_def().empty()) ++graphs;
  }
  std::printf("event file %s%s\n", path.c_str(), CompressionSuffix(compression).c_str());
  std::printf("events: %lld, steps with summaries: %zu", static_cast<long long>(events),
              steps.size());
  if (!steps.empty())
    std::printf(" (%lld..%lld)", static_cast<long long>(*steps.begin()),
                static_cast<long long>(*steps.rbegin()));
  std::printf(", graphs: %lld\n", static_cast<long long>(graphs));
  std::printf("tags (%zu):\n", tags.size());
  for (const auto& [tag, info] : tags) {
    std::printf("  %-40s %6lld values, last at step %lld", tag.c_str(),
                static_cast<long long>(info.count), static_cast<long long>(info.last_step));
    if (info.last_value) std::printf(" = %.6g", *info.last_value);
    std::printf("\n");
  }
  if (raw->corrupt_records() > 0)
    std::printf("corrupt records skipped: %llu\n",
                static_cast<unsigned long long>(raw->corrupt_records()));
  PrintDamage(damage);
  ThrowIfDamaged(path, damage, raw->corrupt_records());
}

}  // namespace loom::cli
