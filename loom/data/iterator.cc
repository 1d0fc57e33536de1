#include "loom/data/iterator.h"

#include <algorithm>
#include <vector>

#include "loom/base/logging.h"

namespace loom::data {
namespace {
constexpr std::string_view kMagic = "LOOM-ITERATOR-STATE-1";
}  // namespace

RandomBase::RandomBase(std::optional<uint64_t> seed) {
  // Never 0, the "unset" mark (a seed mixing to 0 is as good as any other).
  if (seed) value_ = MixSeed(*seed, 0x72616e646f6d2062ULL) | 1;
}

uint64_t RandomBase::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  while (value_ == 0) value_ = RandomSeed();
  return value_;
}

uint64_t RandomBase::saved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return value_;
}

void RandomBase::Restore(uint64_t saved) {
  std::lock_guard<std::mutex> lock(mu_);
  if (saved != 0) value_ = saved;
}

namespace {

// A saved identity comes from a file: bound what a message quotes of it.
std::string_view Clip(std::string_view s) { return s.substr(0, 4096); }

// The first line (stage with its parameters, or the spec) where two identities differ.
std::string IdentityDifference(std::string_view saved, std::string_view current) {
  auto lines = [](std::string_view s) {
    std::vector<std::string_view> out;
    while (!s.empty()) {
      const size_t end = s.find('\n');
      out.push_back(s.substr(0, end));
      if (end == std::string_view::npos) break;
      s.remove_prefix(end + 1);
    }
    return out;
  };
  auto trim = [](std::string_view s) {
    return s.substr(std::min(s.find_first_not_of(' '), s.size()));
  };
  const std::vector<std::string_view> a = lines(Clip(saved)), b = lines(current);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string_view x = i < a.size() ? trim(a[i]) : "(nothing)";
    const std::string_view y = i < b.size() ? trim(b[i]) : "(nothing)";
    if (a.size() <= i || b.size() <= i || a[i] != b[i]) {
      return StrCat("the saved state has '", x, "' where this pipeline has '", y, "'");
    }
  }
  return "they differ";
}

}  // namespace

std::optional<Element> Iterator::GetNext() {
  std::optional<Element> e = GetNextInternal();
  // The message is built only on failure: this runs once per element at every stage.
  if (e && !ElementMatchesSpec(spec_, *e)) {
    CheckElement(spec_, *e, StrCat(stage_, " produced an element that breaks its spec"));
  }
  return e;
}

std::string Iterator::Save() {
  StateWriter w;
  w.WriteString(kMagic);
  w.WriteString(pipeline_);
  w.Write<uint64_t>(random_base_ ? random_base_->saved() : 0);
  SaveState(w);
  return std::move(w.data());
}

void Iterator::Restore(std::string_view blob) {
  StateReader r(blob);
  if (r.ReadString() != kMagic) {
    throw InvalidArgument("not a Loom iterator state blob (", blob.size(), " bytes)");
  }
  std::string pipeline = r.ReadString();
  if (pipeline != pipeline_ && !legacy_pipeline_.empty() && pipeline == legacy_pipeline_) {
    LOOM_LOG(WARNING) << "restoring an iterator state saved by an older Loom, whose pipeline "
                      << "identity did not record batch sizes, buffers or counts: make sure "
                      << "they are those it was saved with (" << legacy_pipeline_ << ")";
  } else if (pipeline != pipeline_) {
    // A position is meaningful only in the pipeline it was saved from: restored into a
    // pipeline with another batch size, buffer or count it would silently mean something
    // else (and break the global step -> input position relation).
    throw InvalidArgument("iterator state was saved from another input pipeline: ",
                          IdentityDifference(pipeline, pipeline_),
                          ". Restore it into the pipeline it was saved from, or start the "
                          "input from its beginning. Saved pipeline:\n",
                          Clip(pipeline), "\nThis pipeline:\n", pipeline_);
  }
  const uint64_t random_base = r.Read<uint64_t>();
  if (random_base_) random_base_->Restore(random_base);
  RestoreState(r);
  if (!r.AtEnd()) throw DataLoss("iterator state has trailing bytes at ", r.position());
}

void Iterator::SaveState(StateWriter& writer) {
  writer.WriteTag(stage_);
  SaveInternal(writer);
}

void Iterator::RestoreState(StateReader& reader) {
  reader.ExpectTag(stage_);
  RestoreInternal(reader);
}

}  // namespace loom::data
