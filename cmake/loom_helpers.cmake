# loom_library(NAME SRCS ... DEPS ...): one layer's library, e.g. loom_base. Each is
# recorded in the global property LOOM_LIBRARIES, which the install rules at the end of the
# top-level CMakeLists.txt export as Loom::<name without loom_> (Loom::base, ...).
function(loom_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} ${ARG_SRCS})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>
    $<INSTALL_INTERFACE:include>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  # The public headers use C++20; a program linking the library compiles as C++20 too.
  target_compile_features(${name} PUBLIC cxx_std_20)
  set_property(GLOBAL APPEND PROPERTY LOOM_LIBRARIES ${name})
endfunction()

# loom_test(NAME SRCS ... DEPS ... [LABELS ...] [TIMEOUT s]): a GoogleTest binary run by CTest.
function(loom_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    LOOM_SHARED_TESTDATA="${LOOM_SHARED_TESTDATA}"
    LOOM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  # A test's own code is setup and checks; the kernels it drives are in the libraries,
  # built with the build type's flags. LOOM_TEST_COPTS (default -O0 in Release) keeps the
  # test sources out of -O3, which takes 2.5x as long to compile (docs/testing.md).
  target_compile_options(${name} PRIVATE ${LOOM_TEST_COPTS})
  add_test(NAME ${name} COMMAND ${name})
  if(ARG_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  else()
    set_tests_properties(${name} PROPERTIES TIMEOUT 300)
  endif()
  if(ARG_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()
