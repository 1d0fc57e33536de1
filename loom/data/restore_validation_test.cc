// Restoring hostile or damaged iterator state: every restored value (row indices,
// positions, counts, elements, tensor sizes) is checked, and a bad one is DataLoss naming
// the stage, never an out-of-bounds read. Found by fuzz/iterator_state_fuzzer.cc.
//
// The blobs are edited at offsets counted from their end, where each stage's own state
// lies (the pipeline header in front may change); each edit first checks the value it
// replaces, so a layout change fails loudly instead of testing nothing.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"

namespace loom::data {
namespace {
using testing::CodeOf;
using testing::Iota;

int64_t Int64At(const std::string& blob, size_t from_end) {
  int64_t v;
  std::memcpy(&v, blob.data() + blob.size() - from_end, 8);
  return v;
}

std::string WithInt64At(std::string blob, size_t from_end, int64_t expected, int64_t value) {
  EXPECT_EQ(Int64At(blob, from_end), expected) << "the state layout changed";
  std::memcpy(blob.data() + blob.size() - from_end, &value, 8);
  return blob;
}

// Restores `blob` into a fresh iterator of `d` and reads on; expects DataLoss whose message
// has `needle`.
void ExpectDataLoss(const Dataset& d, const std::string& blob, const std::string& needle) {
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  auto it = d.MakeIterator();
                  it->Restore(blob);
                  for (int i = 0; i < 20 && it->GetNext(); ++i) {
                  }
                },
                &message),
            ErrorCode::kDataLoss)
      << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
}

// Shuffle's buffer holds row indices on the fast path; they were restored unchecked and
// TensorRows::Gather then copied from outside the source (heap-buffer-overflow).
TEST(RestoreValidationTest, ShuffleRowIndicesAreCheckedAgainstTheSource) {
  const Dataset rows = FromTensorSlices({{"x", Iota(10)}, {"f", Tensor::Zeros(kFloat32, {10, 3})}});
  for (const Dataset& d : {rows.Shuffle(4, {.seed = 3}), rows.Shuffle(4, {.seed = 3}).Batch(2)}) {
    auto it = d.MakeIterator();
    it->GetNext();
    const std::string blob = it->Save();
    // Tail: ... [n=3][3 buffered indices][source position 4 or 5].
    const int64_t position = Int64At(blob, 8);
    ASSERT_TRUE(position == 4 || position == 5) << position;
    const int64_t buffered = Int64At(blob, 16);
    ASSERT_TRUE(buffered >= 0 && buffered < 10) << buffered;
    ExpectDataLoss(d, WithInt64At(blob, 16, buffered, 1000000), "row 1000000 of a source with 10");
    ExpectDataLoss(d, WithInt64At(blob, 16, buffered, -1), "Shuffle state is corrupt");
    // The unedited blob still restores.
    d.MakeIterator()->Restore(blob);
  }
}

// A restored Repeat count of -1 made Repeat(2) endless.
TEST(RestoreValidationTest, RepeatCountMustBeTheDatasets) {
  const Dataset d = Range(0, 10).Repeat(2);
  auto it = d.MakeIterator();
  it->GetNext();
  const std::string blob = it->Save();
  // Tail: [epoch][count][produced u8][has inner u8][range position].
  ExpectDataLoss(d, WithInt64At(blob, 18, 2, -1), "Repeat state is corrupt");
  ExpectDataLoss(d, WithInt64At(blob, 26, 0, -5), "Repeat state is corrupt");
}

// The stage state of a fresh iterator of `d`, split into the header in front of it and the
// state of the input after `own_state_bytes` bytes of the stage's own state.
struct SplitBlob {
  std::string header, input_state;
};
SplitBlob Split(const Dataset& d, size_t own_state_bytes, size_t input_state_bytes) {
  const std::string blob = d.MakeIterator()->Save();
  const size_t state = own_state_bytes + input_state_bytes;
  EXPECT_GT(blob.size(), state);
  return {blob.substr(0, blob.size() - state), blob.substr(blob.size() - input_state_bytes)};
}

// Unbatch's restore dereferenced an empty element, trusted a rank-0 component and an
// out-of-range position (SubTensor outside the batch).
TEST(RestoreValidationTest, UnbatchChecksTheSavedBatchAndPosition) {
  const Dataset d = FromTensorSlices({{"x", Iota(10)}, {"f", Tensor::Zeros(kFloat32, {10, 3})}})
                        .Batch(4)
                        .Unbatch();
  // A fresh Unbatch: tag "Unbatch" (8 + 7 bytes), no batch (1); its input: tag "Batch"
  // (8 + 5) and the source position (8).
  const SplitBlob split = Split(d, 16, 21);
  ASSERT_NE(split.input_state.find("Batch"), std::string::npos);
  auto state = [&](const Element& batch, int64_t position) {
    StateWriter w;
    w.WriteTag("Unbatch");
    w.Write<uint8_t>(1);
    w.WriteElement(batch);
    w.Write<int64_t>(position);
    return split.header + w.data() + split.input_state;
  };
  const Element good = {{"f", Tensor::Zeros(kFloat32, {4, 3})}, {"x", Iota(4)}};
  auto it = d.MakeIterator();
  it->Restore(state(good, 2));
  EXPECT_EQ(it->GetNext()->at("x").scalar<int64_t>(), 2);

  ExpectDataLoss(d, state(Element{}, 0), "Unbatch state is corrupt");
  ExpectDataLoss(d, state({{"f", Tensor::Scalar(1.0f)}, {"x", Tensor::Scalar<int64_t>(1)}}, 0),
                 "Unbatch state is corrupt");
  ExpectDataLoss(d, state({{"f", Tensor::Zeros(kFloat32, {4, 3})}, {"x", Iota(3)}}, 0),
                 "share dim 0");
  ExpectDataLoss(d, state(good, 5), "position 5 in a batch of 4 rows");
  ExpectDataLoss(d, state(good, -1), "position -1");
}

// Interleave called fn on a restored element without the spec check the input's elements
// get, so fn saw a float where it declared an int64.
TEST(RestoreValidationTest, InterleaveChecksRestoredElementsAndBlockCount) {
  int calls = 0;
  const Dataset d = Range(0, 4).Interleave(
      [&calls](const Element& e) {
        ++calls;
        return Range(0, e.at("x").scalar<int64_t>());
      },
      {{"x", {kInt64, Shape{}}}}, {.cycle_length = 2, .block_length = 2});
  // A fresh Interleave: tag (8 + 10), input_done (1), current (8), block_count (8), two
  // closed slots (1 + 1); its input: tag "Range" (8 + 5) and position (8).
  const SplitBlob split = Split(d, 37, 21);
  auto state = [&](const Element& source, int64_t block_count) {
    StateWriter w;
    w.WriteTag("Interleave");
    w.Write<uint8_t>(0);
    w.Write<uint64_t>(0);
    w.Write<int64_t>(block_count);
    w.Write<uint8_t>(1);
    w.WriteElement(source);
    return split.header + w.data();
  };
  ExpectDataLoss(d, state({{"x", Tensor::Scalar(2.5f)}}, 0), "Interleave state is corrupt");
  ExpectDataLoss(d, state({{"y", Tensor::Scalar<int64_t>(2)}}, 0), "Interleave state is corrupt");
  EXPECT_EQ(calls, 0);
  ExpectDataLoss(d, state({{"x", Tensor::Scalar<int64_t>(2)}}, 7), "block of 2");
}

// ReadTensor's element count was an unsigned product that wraps: [2^33, 2^31] of uint8
// counted as 0 bytes, passed the size check and then asked for 2^64 elements.
TEST(RestoreValidationTest, TensorSizesInStateAreCheckedWithoutOverflow) {
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{int64_t{1} << 33, int64_t{1} << 31},
        std::vector<int64_t>{int64_t{1} << 32, int64_t{1} << 32, 0}, std::vector<int64_t>{1000}}) {
    StateWriter w;
    w.Write<int32_t>(static_cast<int32_t>(kUInt8));
    w.Write<int32_t>(static_cast<int32_t>(dims.size()));
    for (int64_t d : dims) w.Write<int64_t>(d);
    w.data() += std::string(16, 'x');
    StateReader r(w.data());
    std::string message;
    EXPECT_EQ(CodeOf([&] { r.ReadTensor(); }, &message), ErrorCode::kDataLoss) << message;
    EXPECT_NE(message.find("16 bytes that remain"), std::string::npos) << message;
  }
  // A scalar needs its bytes too: an int64 scalar with 4 bytes left was copied out of
  // bounds (found by fuzz_iterator_state, in a Prefetch buffer).
  {
    StateWriter w;
    w.Write<int32_t>(static_cast<int32_t>(kInt64));
    w.Write<int32_t>(0);
    w.data() += std::string(4, 'x');
    StateReader r(w.data());
    std::string message;
    EXPECT_EQ(CodeOf([&] { r.ReadTensor(); }, &message), ErrorCode::kDataLoss) << message;
    EXPECT_NE(message.find("4 bytes that remain"), std::string::npos) << message;
  }
  // Strings need at least their 8-byte lengths.
  StateWriter w;
  w.Write<int32_t>(static_cast<int32_t>(kString));
  w.Write<int32_t>(1);
  w.Write<int64_t>(int64_t{1} << 61);
  StateReader r(w.data());
  EXPECT_EQ(CodeOf([&] { r.ReadTensor(); }), ErrorCode::kDataLoss);
}

// The in-memory Cache indexed its elements with a restored, unchecked position.
TEST(RestoreValidationTest, CachePositionMustNotBeNegative) {
  const Dataset d = Range(0, 5).Map([](Element e) { return e; }).Cache();
  auto first = d.MakeIterator();
  while (first->GetNext()) {
  }
  auto it = d.MakeIterator();  // replays the completed cache
  it->GetNext();
  const std::string blob = it->Save();
  // Tail: [replaying u8 = 1][position][offset].
  ASSERT_EQ(blob[blob.size() - 17], 1);
  ExpectDataLoss(d, WithInt64At(blob, 16, 1, -3), "Cache state is corrupt");
}

}  // namespace
}  // namespace loom::data
