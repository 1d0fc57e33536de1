#ifndef LOOM_DATA_ROW_SOURCE_H_
#define LOOM_DATA_ROW_SOURCE_H_

// RowSources and the plain index cursor shared by index-addressable sources.
#include "loom/data/dataset_impl.h"

namespace loom::data {

// Rows of host tensors: Row(i) views row i (zero-copy); Gather copies rows with memcpy.
// REQUIRES: every tensor has rank >= 1 and the same dim 0.
std::shared_ptr<const RowSource> MakeTensorRows(Element tensors);

// Yields 0, 1, ..., num_rows - 1; the state is the position.
std::unique_ptr<IndexCursor> MakeSequentialIndexCursor(int64_t num_rows);

}  // namespace loom::data

#endif  // LOOM_DATA_ROW_SOURCE_H_
