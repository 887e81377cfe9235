# Sanitizer and fuzzer builds. test/fuzz/run_sanitized.sh configures a separate clang build
# tree with both options on; a normal build leaves them off and is unchanged.
#
#   VKD_SANITIZE  e.g. "address,undefined": -fsanitize= list for the targets test/CMakeLists.txt
#                 names (the CPU-only libraries and, for the fuzz targets, the GPU runtime, the
#                 delegate objects and the compiler). Any UBSan report aborts
#                 (-fno-sanitize-recover) so a test cannot pass past one.
#   VKD_FUZZ      ON: coverage-instrument the same targets for libFuzzer and build the fuzz
#                 targets in test/fuzz/ (fuzz_deserialize, fuzz_load_blob, fuzz_graph_ir).
#                 Needs clang (GCC has no libFuzzer).
#
# The flags go on named targets rather than into CMAKE_CXX_FLAGS so this module can live with
# the tests. The Vulkan loader and driver (lavapipe) are never instrumented: they are not ours.
# In such a tree only the targets run_sanitized.sh builds are meant to be built (the shared
# libvkdelegate does not link with the sanitizers' runtimes).
include_guard(GLOBAL)

set(VKD_SANITIZE "" CACHE STRING
  "Comma-separated -fsanitize= list for the CPU-only targets (e.g. address,undefined)")
option(VKD_FUZZ "Build the libFuzzer targets in test/fuzz (clang only)" OFF)

if(VKD_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "VKD_FUZZ=ON needs clang (libFuzzer); CMAKE_CXX_COMPILER is "
                      "${CMAKE_CXX_COMPILER_ID}. Configure with CXX=clang++ or see "
                      "test/fuzz/run_sanitized.sh.")
endif()

# vkd_instrument(<target>...): applies VKD_SANITIZE and, with VKD_FUZZ, libFuzzer coverage to
# each target. Link options are PUBLIC so whatever links an instrumented static library also
# links the runtimes its objects call into.
function(vkd_instrument)
  set(flags)
  if(VKD_SANITIZE)
    list(APPEND flags -fsanitize=${VKD_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  endif()
  if(VKD_FUZZ)
    list(APPEND flags -fsanitize=fuzzer-no-link)
  endif()
  if(NOT flags)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE ${flags})
    target_link_options(${target} PUBLIC ${flags})
  endforeach()
endfunction()

# vkd_add_fuzzer(<name> SOURCES <src>... LIBS <lib>...): a libFuzzer binary (VKD_FUZZ only),
# instrumented like the libraries it links.
function(vkd_add_fuzzer name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;LIBS")
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_compile_options(${name} PRIVATE ${VKD_WARNINGS} -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  vkd_instrument(${name})
endfunction()

# vkd_find_fuzz_clang(): sets VKD_FUZZ_CLANG_OK in the caller when clang and clang++ are on
# PATH (cache: VKD_FUZZ_CLANG, VKD_FUZZ_CLANGXX) and clang++ can link a libFuzzer + ASan +
# UBSan program (clang without compiler-rt cannot), else VKD_FUZZ_CLANG_WHY says what is
# missing. Works from a GCC build: the fuzz test builds its own clang tree. The link probe
# runs once per clang++ and is cached.
function(vkd_find_fuzz_clang)
  find_program(VKD_FUZZ_CLANG NAMES clang DOC "clang for the sanitizer/fuzzer build tree")
  find_program(VKD_FUZZ_CLANGXX NAMES clang++ DOC "clang++ for the sanitizer/fuzzer build tree")
  set(VKD_FUZZ_CLANG_OK OFF PARENT_SCOPE)
  if(NOT VKD_FUZZ_CLANG OR NOT VKD_FUZZ_CLANGXX)
    set(VKD_FUZZ_CLANG_WHY "clang/clang++ not on PATH" PARENT_SCOPE)
    return()
  endif()
  if(NOT VKD_FUZZ_CLANG_PROBED STREQUAL VKD_FUZZ_CLANGXX)
    set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/vkd_fuzz_probe)
    file(WRITE ${dir}/probe.cpp
      "#include <cstddef>\n#include <cstdint>\n"
      "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
    execute_process(
      COMMAND ${VKD_FUZZ_CLANGXX} -fsanitize=fuzzer,address,undefined ${dir}/probe.cpp
              -o ${dir}/probe
      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(links ON)
    else()
      set(links OFF)
    endif()
    set(VKD_FUZZ_CLANG_LINKS ${links} CACHE INTERNAL "clang++ links -fsanitize=fuzzer")
    set(VKD_FUZZ_CLANG_PROBED ${VKD_FUZZ_CLANGXX} CACHE INTERNAL "clang++ the probe ran with")
  endif()
  if(NOT VKD_FUZZ_CLANG_LINKS)
    set(VKD_FUZZ_CLANG_WHY
        "${VKD_FUZZ_CLANGXX} cannot link -fsanitize=fuzzer,address,undefined: no compiler-rt"
        PARENT_SCOPE)
    return()
  endif()
  set(VKD_FUZZ_CLANG_OK ON PARENT_SCOPE)
endfunction()
