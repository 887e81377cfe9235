# The include rules that keep the build's layers one-way (docs/ARCHITECTURE.md, "Layers").
# Run as: cmake -DROOT=<source tree> -P check_layering.cmake
# Every quoted #include of every .h/.cpp/.glsl under ROOT's layer folders is checked against
# the rules below; each violation is printed as "file:line: includes X (rule)" and the script
# fails. Only direct includes are checked: a layer may see another through a header it is
# allowed to include (ops reach the Vulkan context through runtime/graph/ComputeGraph.h).
cmake_minimum_required(VERSION 3.22)
if(NOT ROOT)
  message(FATAL_ERROR "pass -DROOT=<source tree>")
endif()

# Per layer folder: the include prefixes it may use besides its own folder (system headers,
# <...>, are not checked). vkd/generated/ is the embedded SPIR-V registry built from shaders/.
set(_allowed_core "")
set(_allowed_serialization "core/")
set(_allowed_partitioner_schema "core/;serialization/")
set(_allowed_compiler "core/;partitioner_schema/;serialization/")
# Inside the compiler, the leaves sit below the drivers of compiler/ (Parse, ShapeInference,
# Fuse, Interpreter, LayoutPropagation, Fold, InPlace, Emit, Partition, Compiler, ...): of
# compiler/'s own headers they include only the vocabulary every pass speaks. Among themselves:
# reference/ (the helpers the CPU references share) at the bottom, fusion/ (the machinery the
# patterns and lowerings share, which computes with the references) above it, ops/ (one file
# per op family: its descriptors, shape rules, CPU references, patterns and lowerings) on top.
set(_compiler_vocabulary "compiler/GraphIR.h;compiler/PassReport.h;compiler/SchemaView.h")
set(_allowed_compiler/reference "core/;partitioner_schema/;${_compiler_vocabulary}")
set(_allowed_compiler/fusion
  "core/;partitioner_schema/;${_compiler_vocabulary};compiler/reference/")
set(_allowed_compiler/ops
  "core/;partitioner_schema/;${_compiler_vocabulary};compiler/reference/;compiler/fusion/")
set(_allowed_runtime/vk "core/;vkd/generated/")
set(_allowed_runtime/graph "core/;runtime/vk/;serialization/;vkd/generated/")
# Ops read the device profile, the workgroup chooser and the kernels' limits (pure functions of
# the profile and the shader registry), never the Vulkan handles.
set(_allowed_runtime/ops
  "core/;runtime/graph/;serialization/;partitioner_schema/;vkd/generated/;runtime/vk/DeviceProfile.h;runtime/vk/WorkgroupChooser.h;runtime/vk/KernelLimits.h")
set(_allowed_runtime/delegate
  "core/;runtime/vk/;runtime/graph/;runtime/ops/;serialization/;partitioner_schema/;vkdelegate/")
# The model layer sits above both the runtime and the compiler: the delegate only through its
# public headers (plus the header-only boundary helpers its own API shares), never the Vulkan
# runtime's internals.
set(_allowed_model
  "core/;serialization/;partitioner_schema/;compiler/;vkdelegate/;runtime/delegate/ApiBoundary.h")
# The CLI: the public APIs, the model layer and the compiler; of the Vulkan runtime only the
# context (`vkd devices` prints the device profile; `vkd compile --target` asks whether a device
# is there).
set(_allowed_tools/vkd
  "core/;serialization/;partitioner_schema/;compiler/;model/;vkdelegate/;runtime/vk/Context.h")
# A folder inside another layer's folder (compiler/ops in compiler) is a layer of its own: its
# files are checked against its rules only.
set(_layers core serialization partitioner_schema compiler compiler/ops compiler/fusion
  compiler/reference runtime/vk runtime/graph runtime/ops runtime/delegate model tools/vkd)

set(_violations 0)
set(_checked 0)
foreach(layer IN LISTS _layers)
  file(GLOB_RECURSE _files LIST_DIRECTORIES false
    "${ROOT}/${layer}/*.h" "${ROOT}/${layer}/*.hpp" "${ROOT}/${layer}/*.cpp")
  foreach(file IN LISTS _files)
    file(RELATIVE_PATH _rel "${ROOT}" "${file}")
    set(_inner FALSE)
    foreach(other IN LISTS _layers)
      string(FIND "${other}" "${layer}/" _sub)
      string(FIND "${_rel}" "${other}/" _in)
      if(_sub EQUAL 0 AND _in EQUAL 0)
        set(_inner TRUE)
      endif()
    endforeach()
    if(_inner)
      continue()
    endif()
    math(EXPR _checked "${_checked} + 1")
    file(STRINGS "${file}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS _lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
      set(_ok FALSE)
      foreach(prefix IN LISTS _allowed_${layer} ITEMS "${layer}/")
        string(FIND "${inc}" "${prefix}" _at)
        if(_at EQUAL 0)
          set(_ok TRUE)
        endif()
      endforeach()
      if(NOT _ok)
        string(REPLACE ";" ", " _list "${layer}/;${_allowed_${layer}}")
        message("${_rel}: includes \"${inc}\", which ${layer}/ may not include "
                "(it may include: ${_list})")
        math(EXPR _violations "${_violations} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_checked EQUAL 0)
  message(FATAL_ERROR "no source files found under ${ROOT}: wrong ROOT?")
endif()
if(_violations GREATER 0)
  message(FATAL_ERROR "${_violations} include(s) break the layering (checked ${_checked} files)")
endif()
message(STATUS "layering: ${_checked} files, every include follows the rules")
