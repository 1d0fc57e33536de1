# TensorFlow's model files: the V2 checkpoint (tensor bundle) and the LevelDB table format
# of its .index. Their own library, loom_io_tf, so that only users of TF's files link Snappy.
# Snappy (libsnappy-dev): the .index blocks TF 1.x wrote are Snappy-compressed.
find_package(Snappy REQUIRED)
# LevelDB (libleveldb-dev), for the tests only: its TableBuilder writes the test bundles
# (several shards, every dtype, partitioned variables), an independent writer of the table
# format that our reader must read.
find_package(leveldb REQUIRED)

set(_loom_io_tf_srcs sstable.cc tf_checkpoint.cc tf_checkpoint_slices.cc)
set(_loom_io_tf_tests tf_checkpoint_test.cc)
list(TRANSFORM _loom_io_tf_srcs PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
list(TRANSFORM _loom_io_tf_tests PREPEND ${CMAKE_CURRENT_LIST_DIR}/)

loom_library(loom_io_tf
  SRCS ${_loom_io_tf_srcs}
  DEPS loom_tensor loom_proto Snappy::snappy)
loom_test(io_tf_test SRCS ${_loom_io_tf_tests}
  DEPS loom_io_tf leveldb::leveldb nlohmann_json::nlohmann_json)
