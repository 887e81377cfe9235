# vkd_add_shader_library(<target> SOURCE_DIR <dir> [INCLUDE_DIRS <dir>...])
#
# Creates STATIC library <target> holding every shader variant of SOURCE_DIR
# as embedded SPIR-V plus its reflected ShaderInfo. Its PUBLIC include dir has
# the generated header "vkd/generated/ShaderRegistry.h". Each <name>.glsl in
# SOURCE_DIR has its families and their variant axes beside it, in
# <name>.variants.json; the manifest is those files in name order, assembled by
# the generator (a shader without one, or one without its shader, is an error).
# INCLUDE_DIRS (relative to SOURCE_DIR) are the #include search dirs.
#
# At build time tools/shadergen/gen_shader_registry.py compiles each variant
# with glslangValidator (--target-env vulkan1.1), validates it with spirv-val,
# checks the binding / push-constant / spec-constant conventions and writes
# the registry. Variants are compiled in parallel and cached in
# <binary dir>/<target>_cache, so a rebuild recompiles only what changed.
# The generator reruns when any *.glsl / *.glslh / *.json under SOURCE_DIR,
# the generator or one of the tools changes; files added or
# removed under SOURCE_DIR are picked up through CONFIGURE_DEPENDS.
#
# Needs Python3_EXECUTABLE, VKD_GLSLANG_VALIDATOR and VKD_SPIRV_VAL (set by
# VkdDependencies.cmake; found here if that was not included).
include_guard(GLOBAL)

get_filename_component(_vkd_shadergen_script
  "${CMAKE_CURRENT_LIST_DIR}/../tools/shadergen/gen_shader_registry.py" ABSOLUTE)
set_property(GLOBAL PROPERTY VKD_SHADERGEN_SCRIPT "${_vkd_shadergen_script}")
unset(_vkd_shadergen_script)

function(vkd_add_shader_library target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SOURCE_DIR" "INCLUDE_DIRS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "vkd_add_shader_library: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCE_DIR)
    message(FATAL_ERROR "vkd_add_shader_library(${target}): SOURCE_DIR is required")
  endif()
  get_filename_component(source_dir "${ARG_SOURCE_DIR}" ABSOLUTE)
  set(include_args "")
  foreach(dir IN LISTS ARG_INCLUDE_DIRS)
    list(APPEND include_args --include-dir "${dir}")
  endforeach()

  if(NOT Python3_EXECUTABLE)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
  endif()
  if(NOT VKD_GLSLANG_VALIDATOR)
    find_program(VKD_GLSLANG_VALIDATOR NAMES glslangValidator REQUIRED)
  endif()
  if(NOT VKD_SPIRV_VAL)
    find_program(VKD_SPIRV_VAL NAMES spirv-val REQUIRED)
  endif()

  get_property(script GLOBAL PROPERTY VKD_SHADERGEN_SCRIPT)
  file(GLOB_RECURSE shader_files CONFIGURE_DEPENDS
    "${source_dir}/*.glsl" "${source_dir}/*.glslh" "${source_dir}/*.json")

  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_generated")
  set(header "${gen_dir}/include/vkd/generated/ShaderRegistry.h")
  set(source "${gen_dir}/ShaderRegistry.cpp")
  set(stamp "${gen_dir}/ShaderRegistry.stamp")
  set(reflection "${gen_dir}/shader_reflection.json")
  set(cache_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_cache")

  # The stamp is rewritten on every successful run; header and source only
  # when their content changes (restat), so a no-op rebuild compiles no C++.
  add_custom_command(
    OUTPUT "${stamp}" "${header}" "${source}"
    BYPRODUCTS "${reflection}"
    COMMAND "${Python3_EXECUTABLE}" "${script}"
      --source-dir "${source_dir}"
      ${include_args}
      --out-header "${header}"
      --out-cpp "${source}"
      --cache-dir "${cache_dir}"
      --glslang "${VKD_GLSLANG_VALIDATOR}"
      --spirv-val "${VKD_SPIRV_VAL}"
      --stamp "${stamp}"
      --reflection-json "${reflection}"
    DEPENDS ${shader_files} "${script}"
            "${VKD_GLSLANG_VALIDATOR}" "${VKD_SPIRV_VAL}"
    WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
    COMMENT "Compiling, validating and reflecting shader variants for ${target}"
    VERBATIM)

  add_library(${target} STATIC "${source}" "${header}")
  target_include_directories(${target} PUBLIC "${gen_dir}/include")
  target_compile_features(${target} PUBLIC cxx_std_17)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(VKD_WARNINGS)
    target_compile_options(${target} PRIVATE ${VKD_WARNINGS})
  endif()
endfunction()
