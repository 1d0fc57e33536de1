#include "loom/data/iterator.h"

namespace loom::data {
namespace {
constexpr std::string_view kMagic = "LOOM-ITERATOR-STATE-1";
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
  w.Write<uint64_t>(random_base_ ? *random_base_ : 0);
  SaveState(w);
  return std::move(w.data());
}

void Iterator::Restore(std::string_view blob) {
  StateReader r(blob);
  if (r.ReadString() != kMagic) {
    throw InvalidArgument("not a Loom iterator state blob (", blob.size(), " bytes)");
  }
  std::string pipeline = r.ReadString();
  if (pipeline != pipeline_) {
    throw InvalidArgument("iterator state was saved from pipeline ", pipeline,
                          " and cannot be restored into ", pipeline_);
  }
  const uint64_t random_base = r.Read<uint64_t>();
  if (random_base_) *random_base_ = random_base;
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
