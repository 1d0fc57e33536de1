# Record formats: our wire-compatible copies of TensorFlow's protos, TFRecord framing,
# tf.train.Example and TensorBoard event files.

# loom_proto: the generated C++ of loom/io/proto/*.proto. protoc runs with the source
# root as import path and writes into the build root, so the generated headers keep the
# source layout: #include "loom/io/proto/event.pb.h".
set(LOOM_PROTO_NAMES
  types tensor_shape tensor attr_value node_def versions graph summary event feature example
  tensor_bundle saved_model onnx)
set(LOOM_PROTO_SRCS "")
set(LOOM_PROTO_OUT ${PROJECT_BINARY_DIR}/loom/io/proto)
foreach(name ${LOOM_PROTO_NAMES})
  set(proto ${CMAKE_CURRENT_SOURCE_DIR}/proto/${name}.proto)
  # protoc names outputs after the path relative to -I, which keeps loom/io/proto/.
  add_custom_command(
    OUTPUT ${LOOM_PROTO_OUT}/${name}.pb.cc ${LOOM_PROTO_OUT}/${name}.pb.h
    COMMAND protobuf::protoc --cpp_out=${PROJECT_BINARY_DIR} -I ${PROJECT_SOURCE_DIR} ${proto}
    DEPENDS ${proto} protobuf::protoc
    COMMENT "protoc loom/io/proto/${name}.proto"
    VERBATIM)
  list(APPEND LOOM_PROTO_SRCS ${LOOM_PROTO_OUT}/${name}.pb.cc)
endforeach()
add_library(loom_proto STATIC ${LOOM_PROTO_SRCS})
target_include_directories(loom_proto PUBLIC $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
target_link_libraries(loom_proto PUBLIC protobuf::libprotobuf)
# Generated code is not ours to warn about.
target_compile_options(loom_proto PRIVATE -w)

list(APPEND LOOM_IO_RECORD_SRCS
  byte_stream.cc record_writer.cc record_reader.cc example.cc example_builder.cc
  event_file.cc)
list(APPEND LOOM_IO_RECORD_TESTS
  record_io_test.cc example_test.cc event_file_test.cc shared_testdata_test.cc)

loom_library(loom_io_records
  SRCS ${LOOM_IO_RECORD_SRCS}
  DEPS loom_tensor loom_proto protobuf::libprotobuf ZLIB::ZLIB)
loom_test(io_record_test SRCS ${LOOM_IO_RECORD_TESTS}
  DEPS loom_io_records nlohmann_json::nlohmann_json)
