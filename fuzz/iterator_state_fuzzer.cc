// Iterator state (loom/data/iterator.h): restores an iterator of one of the pipelines in
// iterator_state.h from fuzzed bytes, then reads on. The first input byte picks the
// pipeline; the rest is the state blob (as Iterator::Save writes it). A restore either
// throws loom::Error or leaves an iterator that yields well-formed elements.
#include "fuzz/fuzz_util.h"
#include "fuzz/iterator_state.h"
#include "loom/base/error.h"
#include "loom/data/iterator.h"

namespace {
const std::vector<loom::data::Dataset>* pipelines = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  pipelines = new std::vector<loom::data::Dataset>(loom::fuzz::IteratorStatePipelines());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  if (size == 0) return 0;
  const data::Dataset& pipeline = (*pipelines)[data[0] % pipelines->size()];
  try {
    auto it = pipeline.MakeIterator();
    it->Restore(fuzz::AsView(data + 1, size - 1));
    for (int i = 0; i < 64 && it->GetNext(); ++i) {
    }
    // A restored iterator saves and restores again.
    const std::string again = it->Save();
    pipeline.MakeIterator()->Restore(again);
  } catch (const Error&) {
  }
  return 0;
}
