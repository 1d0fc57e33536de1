// `loom inspect`, run as the built binary (LOOM_CLI_PATH): what a file is, what it holds,
// and a non-zero exit when it is damaged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "loom/base/crc32c.h"
#include "loom/base/env.h"
#include "loom/cli/cli_test_util.h"
#include "loom/io/event_file_proto.h"
#include "loom/io/proto/example.pb.h"
#include "loom/io/proto/onnx.pb.h"
#include "loom/io/proto/saved_model.pb.h"
#include "loom/io/record_writer.h"

namespace {

using namespace loom::cli::testing;  // NOLINT: the helpers of cli_test_util.h

TEST(CliTest, InspectTFRecordCountsCorruptRecords) {
  std::string dir = TempDir("records");
  std::string path = dir + "/data.tfrecord";
  {
    auto writer = loom::RecordWriter::Open(loom::Env::Default(), path, {});
    for (int i = 0; i < 5; ++i) {
      loom::proto::Example example;
      auto& f = (*example.mutable_features()->mutable_feature())["label"];
      f.mutable_int64_list()->add_value(i);
      writer->WriteRecord(example.SerializeAsString());
    }
    writer->Close();
  }
  Result r = Loom("inspect " + path + " -n 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "records: 5");
  EXPECT_CONTAINS(r.output, "label");
  EXPECT_CONTAINS(r.output, "int64[1] [1]");
  EXPECT_CONTAINS(r.output, "corrupt records skipped: 0");
  // Flip one payload byte of the third record: its data CRC fails.
  std::string bytes = Read(path);
  size_t record_size = bytes.size() / 5;
  bytes[2 * record_size + 14] ^= 0x55;
  std::ofstream(path, std::ios::binary) << bytes;
  r = Loom("inspect " + path);
  EXPECT_EQ(r.code, 1) << r.output;  // damage: shown, then an error
  EXPECT_CONTAINS(r.output, "'" + path + "' is damaged: 1 record(s) failed their CRC check");
  EXPECT_CONTAINS(r.output, "records: 4");
  EXPECT_CONTAINS(r.output, "corrupt records skipped: 1");
  EXPECT_CONTAINS(r.output, "corrupt record after offset " + std::to_string(2 * record_size));
}

// Five Examples {label: i} in a TFRecord file with `compression`.
void WriteExamples(const std::string& path,
                   loom::Compression compression = loom::Compression::kNone) {
  auto writer = loom::RecordWriter::Open(loom::Env::Default(), path, {.compression = compression});
  for (int i = 0; i < 5; ++i) {
    loom::proto::Example example;
    (*example.mutable_features()->mutable_feature())["label"].mutable_int64_list()->add_value(i);
    writer->WriteRecord(example.SerializeAsString());
  }
  writer->Close();
}

void Truncate(const std::string& path, size_t drop) {
  std::string bytes = Read(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - drop);
}

// The first line naming `path` says what the file is, by content, whatever its name.
TEST(CliTest, InspectSaysWhatAFileIsFromItsBytes) {
  std::string dir = TempDir("sniff");
  WriteExamples(dir + "/plain.bin");
  WriteExamples(dir + "/gzipped.data", loom::Compression::kGzip);
  WriteExamples(dir + "/ZLIB.TFRECORD.Z", loom::Compression::kZlib);
  WriteExamples(dir + "/upper.TFRECORD.GZ", loom::Compression::kGzip);
  for (const auto& [name, first_line] : std::vector<std::pair<std::string, std::string>>{
           {"plain.bin", "TFRecord file " + dir + "/plain.bin\n"},
           {"gzipped.data", "TFRecord file " + dir + "/gzipped.data (gzip)\n"},
           {"ZLIB.TFRECORD.Z", "TFRecord file " + dir + "/ZLIB.TFRECORD.Z (zlib)\n"},
           {"upper.TFRECORD.GZ", "TFRecord file " + dir + "/upper.TFRECORD.GZ (gzip)\n"}}) {
    SCOPED_TRACE(name);
    Result r = Loom("inspect " + dir + "/" + name);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_CONTAINS(r.output, first_line);
    EXPECT_CONTAINS(r.output, "records: 5 ");
    EXPECT_CONTAINS(r.output, "tf.train.Example: 5");
    EXPECT_CONTAINS(r.output, "int64[1] [2]");
  }
  // --compression overrides the sniffing; the wrong one is damage, not "0 records".
  Result r = Loom("inspect --compression gzip " + dir + "/gzipped.data");
  EXPECT_EQ(r.code, 0) << r.output;
  r = Loom("inspect --compression none --kind tfrecord " + dir + "/gzipped.data");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "is damaged");
  EXPECT_NE(Loom("inspect --compression brotli " + dir + "/plain.bin").code, 0);

  // An event file under any name.
  {
    loom::EventFileWriter writer(loom::Env::Default(), dir + "/logs", {});
    writer.WriteScalar("loss", 7, 0.5f);
    writer.Close();
  }
  std::string events = EventsFile(dir + "/logs");
  fs::rename(events, dir + "/renamed.bin");
  r = Loom("inspect " + dir + "/renamed.bin");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "event file " + dir + "/renamed.bin");
  EXPECT_CONTAINS(r.output, "values, last at step 7 = 0.5");

  // npy and IDX by their magic numbers.
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  dict.append(128 - 10 - dict.size() - 1, ' ');
  dict += "\n";
  npy += std::string(1, static_cast<char>(dict.size())) + std::string(1, '\0') + dict +
         std::string(24, '\0');
  Write(dir + "/array.dat", npy);
  r = Loom("inspect " + dir + "/array.dat");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "npy array " + dir + "/array.dat");
  EXPECT_CONTAINS(r.output, "shape: [2,3]");
  Truncate(dir + "/array.dat", 4);
  r = Loom("inspect " + dir + "/array.dat");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "it is truncated");
  Write(dir + "/images", std::string("\0\0\x08\x02\0\0\0\x02\0\0\0\x03", 12) + "abcdef");
  r = Loom("inspect " + dir + "/images");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "IDX array " + dir + "/images");
  EXPECT_CONTAINS(r.output, "shape: [2,3]");

  // A data shard alone is named and sent to its index.
  Write(dir + "/model.ckpt-1000.data-00000-of-00001", "raw tensor bytes");
  r = Loom("inspect " + dir + "/model.ckpt-1000.data-00000-of-00001");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "TensorFlow checkpoint data shard");
  EXPECT_CONTAINS(r.output, "inspect the .index file beside it");
  // Bytes of no known format are an error, not "records: 0, corrupt 1" with exit 0.
  Write(dir + "/notes.txt", "hello, this is plain text and no TFRecord\n");
  r = Loom("inspect " + dir + "/notes.txt");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "cannot tell what '" + dir + "/notes.txt' is");
}

// Several paths are inspected one after another, each under a "==> PATH <==" line; a
// damaged one is reported and the rest still inspected, and the exit status says one
// failed. A directory without checkpoints or event files is a directory of data files:
// each file in it is inspected (subdirectories are named, not entered).
TEST(CliTest, InspectTakesSeveralPathsAndADirectoryOfFiles) {
  std::string dir = TempDir("several");
  WriteExamples(dir + "/a.tfrecord");
  WriteExamples(dir + "/b.tfrecord.gz", loom::Compression::kGzip);
  Result r = Loom("inspect " + dir + "/a.tfrecord " + dir + "/b.tfrecord.gz");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "==> " + dir + "/a.tfrecord <==");
  EXPECT_CONTAINS(r.output, "==> " + dir + "/b.tfrecord.gz <==");
  EXPECT_CONTAINS(r.output, "(gzip)");
  size_t first = r.output.find("records: 5");
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("records: 5", first + 1), std::string::npos) << r.output;

  // The first is missing, the second damaged, the third fine: all three are shown.
  WriteExamples(dir + "/c.tfrecord");
  Truncate(dir + "/b.tfrecord.gz", 6);
  r = Loom("inspect " + dir + "/missing.tfrecord " + dir + "/b.tfrecord.gz " + dir + "/c.tfrecord");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "'" + dir + "/missing.tfrecord' does not exist");
  EXPECT_CONTAINS(r.output, "'" + dir + "/b.tfrecord.gz' is damaged");
  EXPECT_CONTAINS(r.output, "==> " + dir + "/c.tfrecord <==");
  EXPECT_CONTAINS(r.output, "2 of 3 paths could not be inspected");
  EXPECT_LT(r.output.find("/missing.tfrecord' does not exist"),
            r.output.find("==> " + dir + "/b.tfrecord.gz <=="));

  // The directory: its three files in name order, the damaged one failing the exit.
  fs::create_directories(dir + "/sub");
  r = Loom("inspect " + dir);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "directory " + dir + ": 3 file(s)");
  EXPECT_CONTAINS(r.output, "directory " + dir + "/sub: not entered");
  EXPECT_LT(r.output.find("==> " + dir + "/a.tfrecord <=="),
            r.output.find("==> " + dir + "/b.tfrecord.gz <=="));
  EXPECT_LT(r.output.find("==> " + dir + "/b.tfrecord.gz <=="),
            r.output.find("==> " + dir + "/c.tfrecord <=="));
  EXPECT_CONTAINS(r.output, "1 of 3 paths could not be inspected");
  fs::remove(dir + "/b.tfrecord.gz");
  r = Loom("inspect " + dir);
  EXPECT_EQ(r.code, 0) << r.output;

  // A directory with nothing to inspect is an error, not an empty "model directory".
  std::string empty = TempDir("several_empty");
  r = Loom("inspect " + empty);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "holds no files, no checkpoint and no event file");
}

std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>(v | 0x80);
  return out + static_cast<char>(v);
}

std::string Fixed32(uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// A LevelDB block of `entries` (sorted, no prefix sharing) with its trailer.
std::string LevelDbBlock(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string block;
  for (const auto& [k, v] : entries)
    block += Varint(0) + Varint(k.size()) + Varint(v.size()) + k + v;
  block += Fixed32(0) + Fixed32(1);  // one restart point, at 0
  const char type = 0;
  uint32_t crc = loom::crc32c::Extend(loom::crc32c::Value(block.data(), block.size()), &type, 1);
  return block + type + Fixed32(loom::crc32c::Mask(crc));
}

// TensorFlow's checkpoint index for one float32 tensor "w" of shape [3] at bytes 0..12 of
// shard 0: a LevelDB table (data block, metaindex block, index block, footer).
std::string TFCheckpointIndex() {
  const std::string header = "\x08\x01";                                  // num_shards: 1
  const std::string entry = std::string("\x08\x01", 2) +                  // dtype: DT_FLOAT
                            std::string("\x12\x04\x12\x02\x08\x03", 6) +  // shape: [3]
                            std::string("\x28\x0c", 2) +                  // size: 12
                            "\x35" +
                            Fixed32(loom::crc32c::Mask(  // crc32c of 12 zero bytes
                                loom::crc32c::Value(std::string(12, '\0').data(), 12)));
  std::string data = LevelDbBlock({{"", header}, {"w", entry}});
  std::string meta = LevelDbBlock({});
  std::string index = LevelDbBlock({{"x", Varint(0) + Varint(data.size() - 5)}});
  std::string footer = Varint(data.size()) + Varint(meta.size() - 5) +
                       Varint(data.size() + meta.size()) + Varint(index.size() - 5);
  footer.resize(40, '\0');
  const unsigned char magic[8] = {0x57, 0xfb, 0x80, 0x8b, 0x24, 0x75, 0x47, 0xdb};
  return data + meta + index + footer + std::string(reinterpret_cast<const char*>(magic), 8);
}

// TensorFlow's checkpoint index (a LevelDB table) lists its tensors, checked against the
// data shard; it was read as a corrupt TFRecord with exit 0.
TEST(CliTest, InspectListsTensorFlowCheckpointIndex) {
  std::string dir = TempDir("tf_index");
  const std::string index = dir + "/model.ckpt-7.index",
                    shard = dir + "/model.ckpt-7.data-00000-of-00001";
  Write(index, TFCheckpointIndex());
  Write(shard, std::string(12, '\0'));
  Result r = Loom("inspect " + index);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "TensorFlow checkpoint index (tensor bundle) " + index +
                                ": 1 tensors in 1 data shard(s)\n");
  EXPECT_CONTAINS(r.output, "  w ");
  EXPECT_CONTAINS(r.output, "DT_FLOAT   [3]\n");
  // The shard is shorter than the tensor; then missing.
  Write(shard, std::string(8, '\0'));
  r = Loom("inspect " + index);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "tensor 'w' (bytes [0, 12)): lies past the end of the file's 8 bytes");
  // The shard's bytes no longer match the tensor's checksum.
  Write(shard, std::string(11, '\0') + "x");
  r = Loom("inspect " + index);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "tensor 'w' (bytes [0, 12)): fails its checksum");
  fs::remove(shard);
  r = Loom("inspect " + index);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "data file '" + shard + "' does not exist");
  // A flipped byte in the data block fails its CRC.
  std::string bytes = TFCheckpointIndex();
  bytes[6] ^= 0x20;
  Write(index, bytes);
  r = Loom("inspect " + index);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "data#0 block at offset 0");
  EXPECT_CONTAINS(r.output, "fails its checksum");
}

// A file cut short is reported as truncated, after what could be read, with exit 1:
// plain TFRecord, gzip (the stream ends early) and event files.
TEST(CliTest, InspectReportsTruncatedFiles) {
  std::string dir = TempDir("truncated");
  WriteExamples(dir + "/plain.tfrecord");
  WriteExamples(dir + "/gz.tfrecord.gz", loom::Compression::kGzip);
  {
    loom::EventFileWriter writer(loom::Env::Default(), dir + "/logs", {});
    for (int step = 1; step <= 3; ++step) writer.WriteScalar("loss", step, 1.0f / step);
    writer.Close();
  }
  fs::rename(EventsFile(dir + "/logs"), dir + "/events.out.tfevents.1.host");
  for (const char* name : {"plain.tfrecord", "gz.tfrecord.gz", "events.out.tfevents.1.host"}) {
    SCOPED_TRACE(name);
    Result r = Loom("inspect " + dir + "/" + name);
    ASSERT_EQ(r.code, 0) << r.output;
    Truncate(dir + "/" + name, 6);
    r = Loom("inspect " + dir + "/" + name);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_CONTAINS(r.output, "\ntruncated: truncated record at offset ");
    EXPECT_CONTAINS(
        r.output, "loom: error: DataLoss: '" + dir + "/" + name + "' is damaged: it is truncated");
  }
}

// SequenceExamples are shown with their context and feature lists.
TEST(CliTest, InspectShowsSequenceExamples) {
  std::string dir = TempDir("sequence");
  {
    auto writer = loom::RecordWriter::Open(loom::Env::Default(), dir + "/seq.tfrecord", {});
    loom::proto::SequenceExample sequence;
    (*sequence.mutable_context()->mutable_feature())["length"].mutable_int64_list()->add_value(3);
    auto& tokens = (*sequence.mutable_feature_lists()->mutable_feature_list())["tokens"];
    for (int t = 0; t < 3; ++t) tokens.add_feature()->mutable_int64_list()->add_value(10 + t);
    writer->WriteRecord(sequence.SerializeAsString());
    writer->Close();
  }
  Result r = Loom("inspect " + dir + "/seq.tfrecord");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "record 0 (offset 0): tf.train.SequenceExample\n");
  EXPECT_CONTAINS(r.output, "  context:\n    length");
  EXPECT_CONTAINS(r.output, "  feature_lists:\n    tokens");
  EXPECT_CONTAINS(r.output, "3 steps: int64[1] [10]; int64[1] [11]; int64[1] [12]");
  EXPECT_CONTAINS(r.output, "tf.train.Example: 0, tf.train.SequenceExample: 1");
}

// A safetensors file naming one tensor twice is an error, not one tensor shown.
TEST(CliTest, InspectRejectsDuplicateSafetensorsKeys) {
  std::string dir = TempDir("dup_safetensors");
  std::string header =
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  Write(dir + "/dup.safetensors", bytes + header + std::string(4, '\0'));
  Result r = Loom("inspect " + dir + "/dup.safetensors");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "DataLoss");
  EXPECT_CONTAINS(r.output, "'w'");
  EXPECT_CONTAINS(r.output, "more than once");
  // Cut inside its header, it is a truncated safetensors file, not "an unknown format".
  Write(dir + "/cut.safetensors", bytes + header.substr(0, header.size() / 2));
  r = Loom("inspect " + dir + "/cut.safetensors");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "DataLoss");
  EXPECT_CONTAINS(r.output, "truncated");
}

// Examples where "x" is absent from every fourth record, "tags" (int64) and "words"
// (bytes) have 0 to 2 values, and the label is tags' first value being even.
TEST(CliTest, InspectSharedTestdata) {
  std::string root = LOOM_SHARED_TESTDATA;
  if (!fs::exists(root + "/tfevents")) GTEST_SKIP() << "no shared testdata at " << root;
  Result r = Loom("inspect " + root + "/tfevents/lingvo_events.out.tfevents.test");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "bleu/dev");
  r = Loom("inspect " + root + "/tfevents/tfx_estimator_model_dir");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "model.ckpt-1000");
  r = Loom("inspect " + root + "/safetensors/f.safetensors");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "F32");
  EXPECT_CONTAINS(r.output, "[6]");
  r = Loom("inspect " + root + "/tfrecord/tfx_penguin_eval_data_tfrecord-00000-of-00001.gz");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "culmen_depth_mm");
  EXPECT_CONTAINS(r.output, "(gzip)");
  // A real TensorFlow checkpoint index (a LevelDB table written by TF).
  r = Loom("inspect " + root + "/tf/tfx_estimator_ckpt/model.ckpt-999.index");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, ": 60 tensors in 1 data shard(s)");
  EXPECT_CONTAINS(r.output, "dnn/hiddenlayer_0/kernel                         DT_FLOAT   [3,100]");
  r = Loom("inspect " + root + "/tfrecord/tfx_tfjs_next_page_data.tfrecord.gz");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "records: 100");
}

// TF's model files: a checkpoint by its prefix (no file of that name) with its global
// step, a model_dir holding only TF checkpoints, a TF SavedModel and its signatures.
TEST(CliTest, InspectTensorFlowModels) {
  const std::string tf = std::string(LOOM_SHARED_TESTDATA) + "/tf";
  Result r = Loom("inspect " + tf + "/tfx_estimator_ckpt/model.ckpt-999");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, ": 60 tensors in 1 data shard(s)");
  EXPECT_CONTAINS(r.output, "global step: 999");
  std::string dir = TempDir("inspect_tf_model_dir");
  for (const std::string f : {"model.ckpt-999.index", "model.ckpt-999.data-00000-of-00001"}) {
    fs::copy_file(tf + "/tfx_estimator_ckpt/" + f, dir + "/" + f);
  }
  Write(dir + "/checkpoint",
        "model_checkpoint_path: \"model.ckpt-999\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-999\"\n");
  r = Loom("inspect " + dir);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "model.ckpt-999\n");  // not "(missing)"
  EXPECT_EQ(r.output.find("(missing)"), std::string::npos) << r.output;
  EXPECT_CONTAINS(r.output, "global step: 999");
  EXPECT_CONTAINS(r.output, "dnn/hiddenlayer_0/kernel");
  r = Loom("inspect " + tf + "/half_plus_two/00000123");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "TensorFlow SavedModel " + tf +
                                "/half_plus_two/00000123 (tags: serve): 5 signature(s)");
  EXPECT_CONTAINS(r.output, "  classify_x_to_y (tensorflow/serving/classify)\n");
  EXPECT_CONTAINS(r.output, "tf.Example feature x: float32[1]\n");
  EXPECT_CONTAINS(r.output, "tf.Example feature x2: float32[1] (has a default)");
  EXPECT_CONTAINS(r.output, "input  x            x:0 float32[?,1]");
  r = Loom("inspect " + tf + "/half_plus_two/00000123/saved_model.pb");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "5 signature(s)");

  // A SavedModel none of whose signatures Loom can run is still listed.
  loom::proto::SavedModel saved;
  loom::proto::MetaGraphDef* meta = saved.add_meta_graphs();
  meta->mutable_meta_info_def()->add_tags("serve");
  loom::proto::NodeDef* x = meta->mutable_graph_def()->add_node();
  x->set_name("x");
  x->set_op("Placeholder");
  (*x->mutable_attr())["dtype"].set_type(loom::proto::DT_FLOAT);
  loom::proto::NodeDef* erf = meta->mutable_graph_def()->add_node();
  erf->set_name("erf");
  erf->set_op("Digamma");
  erf->add_input("x");
  loom::proto::SignatureDef& sig = (*meta->mutable_signature_def())["serving_default"];
  sig.set_method_name("tensorflow/serving/predict");
  (*sig.mutable_inputs())["x"].set_name("x:0");
  (*sig.mutable_inputs())["x"].set_dtype(loom::proto::DT_FLOAT);
  (*sig.mutable_outputs())["y"].set_name("erf:0");
  const std::string erf_dir = TempDir("inspect_tf_saved_model");
  Write(erf_dir + "/saved_model.pb", saved.SerializeAsString());
  r = Loom("inspect " + erf_dir);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "input  x            x:0 float32<unknown>");
  EXPECT_CONTAINS(r.output, "output y            erf:0 ?<unknown>");
  EXPECT_CONTAINS(r.output, "No signature can run in Loom: ");
  EXPECT_CONTAINS(r.output, "unsupported TF ops: Digamma x1");
}

// ONNX models: python3-onnx's tiny models (inline and external weights) are listed; a
// truncated file, a node reading a value nothing produces, an initializer whose bytes do
// not match its dims, and missing, short or escaping external data are DataLoss, exit 1.
TEST(CliTest, InspectOnnxModels) {
  const std::string onnx = std::string(LOOM_SHARED_TESTDATA) + "/onnx";
  Result r = Loom("inspect " + onnx + "/tiny.onnx");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "ONNX model " + onnx + "/tiny.onnx (175 bytes)");
  EXPECT_CONTAINS(r.output, "ir_version: 8\nproducer: onnx-helper");
  EXPECT_CONTAINS(r.output, "opsets: ai.onnx 13\n");
  EXPECT_CONTAINS(r.output, "graph 'tiny': 3 nodes");
  EXPECT_CONTAINS(r.output, "  X                        float32[?,3]\n");
  EXPECT_CONTAINS(r.output, "  Y                        float32[?,2]\n");
  EXPECT_CONTAINS(r.output, "  MatMul                           1\n");
  EXPECT_CONTAINS(r.output, "initializers: 2 (8 parameters)\n");

  const std::string dir = TempDir("inspect_onnx");
  fs::copy_file(onnx + "/tiny_ext.onnx", dir + "/tiny_ext.onnx");
  fs::copy_file(onnx + "/tiny_ext.data", dir + "/tiny_ext.data");
  r = Loom("inspect " + dir + "/tiny_ext.onnx");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output,
                  "initializers: 2 (8 parameters; 32 bytes in external data: "
                  "tiny_ext.data)");
  // External data cut short, then gone.
  fs::resize_file(dir + "/tiny_ext.data", 30);
  r = Loom("inspect " + dir + "/tiny_ext.onnx");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "initializer 'B' needs bytes [24, 32) of '" + dir +
                                "/tiny_ext.data', which has 30 bytes (it is truncated)");
  fs::remove(dir + "/tiny_ext.data");
  r = Loom("inspect " + dir + "/tiny_ext.onnx");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "DataLoss: '" + dir +
                                "/tiny_ext.onnx': initializer 'W' is in "
                                "external data file '" +
                                dir + "/tiny_ext.data', which does not exist");

  // Cut in half: it no longer parses, and the name still says what it was meant to be.
  const std::string bytes = Read(onnx + "/tiny.onnx");
  Write(dir + "/cut.onnx", bytes.substr(0, bytes.size() / 2));
  r = Loom("inspect " + dir + "/cut.onnx");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "is damaged: it does not parse as an ONNX ModelProto");

  auto write_model = [&](const std::string& name, const loom::onnx::ModelProto& model) {
    std::ofstream(dir + "/" + name, std::ios::binary) << model.SerializeAsString();
    return Loom("inspect " + dir + "/" + name);
  };
  loom::onnx::ModelProto tiny;
  ASSERT_TRUE(tiny.ParseFromString(bytes));
  // Named anything, it is still known by its bytes.
  r = write_model("model.bin", tiny);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "graph 'tiny': 3 nodes");

  loom::onnx::ModelProto lost_node = tiny;
  lost_node.mutable_graph()->mutable_node()->DeleteSubrange(0, 1);  // MatMul, which makes XW
  r = write_model("lost_node.onnx", lost_node);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output,
                  "node '' (Add) reads 'XW', which no graph input, initializer or "
                  "earlier node produces");

  loom::onnx::ModelProto short_weights = tiny;
  short_weights.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(20);
  r = write_model("short_weights.onnx", short_weights);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "initializer 'W' (float32[3,2]) needs 24 bytes of raw_data but has 20");

  loom::onnx::ModelProto huge_dims = tiny;
  huge_dims.mutable_graph()->mutable_initializer(0)->set_dims(0, int64_t{1} << 40);
  huge_dims.mutable_graph()->mutable_initializer(0)->set_dims(1, int64_t{1} << 40);
  r = write_model("huge_dims.onnx", huge_dims);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "whose element count is negative or overflows");

  loom::onnx::ModelProto escaping;
  ASSERT_TRUE(escaping.ParseFromString(Read(onnx + "/tiny_ext.onnx")));
  escaping.mutable_graph()->mutable_initializer(0)->mutable_external_data(0)->set_value(
      "../../etc/passwd");
  r = write_model("escaping.onnx", escaping);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_CONTAINS(r.output,
                  "external data location '../../etc/passwd', outside the model's "
                  "directory");
}

}  // namespace
