# File sources of the data layer (file_sources.h): npy, IDX, TFRecord + Example parsing,
# text lines, CSV. Included by loom/data/CMakeLists.txt before its loom_library call.
# That call lists its sources literally, so the sources are added to loom_data once the
# directory is processed (cmake_language DEFER); LOOM_DATA_FILE_SOURCES_SRCS holds them.
set(LOOM_DATA_FILE_SOURCES_SRCS
  ${CMAKE_CURRENT_LIST_DIR}/file_source_util.cc
  ${CMAKE_CURRENT_LIST_DIR}/npy_dataset.cc
  ${CMAKE_CURRENT_LIST_DIR}/idx_dataset.cc
  ${CMAKE_CURRENT_LIST_DIR}/tfrecord_dataset.cc
  ${CMAKE_CURRENT_LIST_DIR}/parse_examples.cc
  ${CMAKE_CURRENT_LIST_DIR}/text_line_dataset.cc
  ${CMAKE_CURRENT_LIST_DIR}/csv_dataset.cc)
list(APPEND LOOM_DATA_SRCS ${LOOM_DATA_FILE_SOURCES_SRCS})
cmake_language(DEFER CALL target_sources loom_data PRIVATE ${LOOM_DATA_FILE_SOURCES_SRCS})

loom_test(data_file_sources_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/file_sources_test.cc ${CMAKE_CURRENT_LIST_DIR}/real_files_test.cc
  DEPS loom_data nlohmann_json::nlohmann_json)

# Not a test: bench/data_files_bench.cc, run by hand (see its header).
add_executable(data_files_bench ${PROJECT_SOURCE_DIR}/bench/data_files_bench.cc)
target_link_libraries(data_files_bench PRIVATE loom_data)
# Not a test: bench/data_memory_bench.cc, peak memory over a 4 GiB dataset (see its header).
add_executable(data_memory_bench ${PROJECT_SOURCE_DIR}/bench/data_memory_bench.cc)
target_link_libraries(data_memory_bench PRIVATE loom_data)
