# The bundled example model end to end (cmake -P): examples/refinenet_lite/make_model.py writes
# the graph, weights and input; `vkd compile --report` compiles it; the compiled graph must have
# every pattern fused (the pixel shuffles, residual adds and the last dequantize into the
# convolutions' stores, the first quantize into the stem convolution's load, each depthwise
# convolution with the 1x1 convolutions before and after it, the last upsampling stage's
# pixel-shuffled 1x1 with the head reading it) and no conversion node
# (q8ta_convert / float_convert) next to a pixel shuffle; `vkd run --check` then compares every
# named tensor and the float logits with the CPU reference interpreter (int8 exactly, float32
# within 1e-5 relative); the same graph compiled with --no-fuse-epilogue gives the same logits,
# byte for byte. Any failed check is a FATAL_ERROR.
#
#   -DVKD=path -DPYTHON=path (with torch and numpy) -DSOURCE_DIR=dir -DWORK=dir (emptied first)
#   -DNPY_COMPARE=path
cmake_minimum_required(VERSION 3.22)

foreach(_var VKD PYTHON SOURCE_DIR WORK NPY_COMPARE)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "example_refinenet_lite.cmake: -D${_var}= missing")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/out")

# run(args...): runs a command in WORK; sets RC, STDOUT, STDERR and echoes them.
function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " cmdline "${ARGN}")
  message("$ ${cmdline}\n--- exit code ${rc}\n--- stdout:\n${out}--- stderr:\n${err}---")
  set(RC "${rc}" PARENT_SCOPE)
  set(STDOUT "${out}" PARENT_SCOPE)
  set(STDERR "${err}" PARENT_SCOPE)
endfunction()

function(expect_exit code what)
  if(NOT "${RC}" STREQUAL "${code}")
    message(FATAL_ERROR "${what}: expected exit code ${code}, got '${RC}'")
  endif()
endfunction()

# expect_stdout(regex what): the last run's stdout must match `regex`, else `what` fails.
function(expect_stdout regex what)
  if(NOT STDOUT MATCHES "${regex}")
    message(FATAL_ERROR "${what}")
  endif()
endfunction()

run("${PYTHON}" "${SOURCE_DIR}/examples/refinenet_lite/make_model.py" "${WORK}")
expect_exit(0 "make_model.py")
# A second run without --force must refuse to replace the files.
run("${PYTHON}" "${SOURCE_DIR}/examples/refinenet_lite/make_model.py" "${WORK}")
expect_exit(2 "make_model.py over existing files")

run("${VKD}" compile refinenet_lite.json --weights refinenet_lite.safetensors
    -o refinenet_lite.vkd --report)
set(report "${STDOUT}")
set(compile_rc "${RC}")

# The compiled graph: the lines between "[final]" and "[placements]", one node each:
# "  op(in, ...) -> out".
string(FIND "${report}" "\n[final]" final_at)
string(FIND "${report}" "\n[placements]" placements_at)
if(final_at LESS 0 OR placements_at LESS final_at)
  message(FATAL_ERROR "the report has no [final] graph")
endif()
math(EXPR len "${placements_at} - ${final_at}")
string(SUBSTRING "${report}" ${final_at} ${len} final)
string(REPLACE "\n" ";" final_lines "${final}")
set(producer_ops "")    # "value=op" for every node output
set(nodes "")           # "op|in,in|out"
foreach(line IN LISTS final_lines)
  if(line MATCHES "^  ([a-z0-9_]+)\\(([^)]*)\\) -> (.+)$")
    set(op "${CMAKE_MATCH_1}")
    string(REPLACE ", " "," ins "${CMAKE_MATCH_2}")
    set(outv "${CMAKE_MATCH_3}")
    list(APPEND nodes "${op}|${ins}|${outv}")
    set(op_of_${outv} "${op}")
  endif()
endforeach()
list(LENGTH nodes node_count)

# Every quantized pattern of the graph is fused: the stem conv quantizing the float input on
# load, 3 pixel-shuffled conv adding a residual tensor in their store, the 4 inverted-residual
# blocks (1x1 expansion, depthwise, 1x1) each one op (one of them adding the residual), the last
# stage's 1x1 writing its output pixel-shuffled and the head conv dequantizing its output as one
# op (that shuffled output never written), no plain, shuffled or dequantizing conv on its own, no
# standalone quantize, add, shuffle or dequantize, and nothing else but conversions (counted
# below): 9 nodes.
foreach(pair "q8ta_conv2d_fq;1" "q8ta_quantize;0" "q8ta_conv2d;0" "q8ta_conv2d_ps;0"
             "q8ta_conv2d_add;3" "q8ta_conv2d_dw_pw;0" "q8ta_conv2d_dw_pw_add;0"
             "q8ta_conv2d_pw_dw_pw;3" "q8ta_conv2d_pw_dw_pw_add;1" "q8ta_conv2d_q_dq;0"
             "q8ta_conv2d_ps_pw_q_dq;1" "q8ta_add;0" "q8ta_pixel_shuffle;0" "q8ta_dequantize;0")
  list(GET pair 0 op)
  list(GET pair 1 want)
  set(got 0)
  foreach(n IN LISTS nodes)
    if(n MATCHES "^${op}\\|")
      math(EXPR got "${got} + 1")
    endif()
  endforeach()
  if(NOT got EQUAL want)
    message(FATAL_ERROR "compiled graph: ${got} ${op} node(s), expected ${want}")
  endif()
endforeach()
if(NOT node_count EQUAL 9)
  message(FATAL_ERROR "compiled graph: ${node_count} nodes, expected 9")
endif()

string(CONCAT fq_line "fused q \\(node 0\\) into the load of q8ta_conv2d 'stem': "
       "q8ta_conv2d_fq reads 'x' \\(float32\\) and quantizes it on load\n")
if(NOT report MATCHES "${fq_line}")
  message(FATAL_ERROR "vkd compile --report: no line for the quantize in the stem's load")
endif()
string(CONCAT dw_pw_line "fused depthwise q8ta_conv2d 'skip1_d' \\([^)]*\\) into "
       "q8ta_conv2d_add 'skip1' \\([^)]*\\): q8ta_conv2d_dw_pw_add reads 'skip1_e' and writes "
       "'skip1'; 'skip1_d' \\(96 channels\\) is not written\n")
if(NOT report MATCHES "${dw_pw_line}")
  message(FATAL_ERROR "vkd compile --report: no line for the first depthwise -> 1x1 block")
endif()
string(CONCAT expansion_line "fused 1x1 expansion q8ta_conv2d 'skip1_e' \\([^)]*\\) into "
       "q8ta_conv2d_dw_pw_add 'skip1' \\([^)]*\\): q8ta_conv2d_pw_dw_pw_add reads 'stem' and "
       "writes 'skip1'; 'skip1_e' \\(96 channels\\) is not written\n")
if(NOT report MATCHES "${expansion_line}")
  message(FATAL_ERROR "vkd compile --report: no line for the first block's expansion")
endif()
string(CONCAT shuffled_head_line "fused pixel-shuffled q8ta_conv2d_ps 'up4' \\([^)]*\\) into "
       "q8ta_conv2d_q_dq 'logits' \\([^)]*\\): q8ta_conv2d_ps_pw_q_dq reads 'up3' and writes "
       "'logits'; 'up4' \\(24 channels\\) is not written\n")
if(NOT report MATCHES "${shuffled_head_line}")
  message(FATAL_ERROR "vkd compile --report: no line for the last stage's 1x1 and the head")
endif()

# Conversion nodes adjacent to a pixel shuffle: one producing its input, or one reading its output
# (of a q8ta_pixel_shuffle or of a convolution that writes its output shuffled).
set(shuffles q8ta_pixel_shuffle q8ta_conv2d_ps q8ta_conv2d_add q8ta_conv2d_ps_pw_q_dq)
set(adjacent 0)
set(conversions 0)
foreach(n IN LISTS nodes)
  string(REPLACE "|" ";" parts "${n}")
  list(GET parts 0 op)
  list(GET parts 1 ins)
  list(GET parts 2 outv)
  string(REPLACE "," ";" ins "${ins}")
  if(op STREQUAL "q8ta_convert" OR op STREQUAL "float_convert")
    math(EXPR conversions "${conversions} + 1")
    foreach(i IN LISTS ins)
      if("${op_of_${i}}" IN_LIST shuffles)
        math(EXPR adjacent "${adjacent} + 1")
        message("conversion after a pixel shuffle: ${n}")
      endif()
    endforeach()
  elseif(op IN_LIST shuffles)
    foreach(i IN LISTS ins)
      if("${op_of_${i}}" STREQUAL "q8ta_convert" OR "${op_of_${i}}" STREQUAL "float_convert")
        math(EXPR adjacent "${adjacent} + 1")
        message("conversion before a pixel shuffle: ${n}")
      endif()
    endforeach()
  endif()
endforeach()
message("compiled graph: ${node_count} nodes, ${conversions} conversion node(s), "
        "${adjacent} next to a pixel shuffle")
if(NOT adjacent EQUAL 0)
  message(FATAL_ERROR "${adjacent} conversion node(s) next to the pixel shuffles, expected 0")
endif()

# Only now the exit status: a compiler that cannot run an op yet still prints the graph above.
expect_exit(0 "vkd compile")

run("${VKD}" run refinenet_lite.vkd --input x=image.npy --output-dir out
    --check refinenet_lite.json --weights refinenet_lite.safetensors)
expect_exit(0 "vkd run --check")
expect_stdout("\n  logits \\(output\\) +float32 +\\[1,8,256,144\\] +[^ ]+ 0/294912 "
              "vkd run --check: the float logits are not compared, or differ")
expect_stdout("check: every compared tensor matches the reference\n"
              "vkd run --check: not every tensor matches")
if(NOT EXISTS "${WORK}/out/logits.npy")
  message(FATAL_ERROR "vkd run: out/logits.npy not written")
endif()

# Without the epilogue fusions: q8ta_quantize -> q8ta_conv2d, q8ta_conv2d -> q8ta_pixel_shuffle
# and -> q8ta_dequantize, the expansion, depthwise and 1x1 convolutions apart again, the head
# its own q8ta_conv2d reading the shuffled 'up4', the same logits.
run("${VKD}" compile refinenet_lite.json --weights refinenet_lite.safetensors
    -o unfused.vkd --report --no-fuse-epilogue)
expect_exit(0 "vkd compile --no-fuse-epilogue")
expect_stdout("into q8ta_pixel_shuffle 'up4'"
              "vkd compile --no-fuse-epilogue: the last pixel shuffle is not its own op")
expect_stdout("into q8ta_add 'up3'"
              "vkd compile --no-fuse-epilogue: the last residual add is not its own op")
expect_stdout("q8ta_dequantize\\(logits_q\\) -> logits\n"
              "vkd compile --no-fuse-epilogue: the last dequantize is not its own op")
expect_stdout("\n  q8ta_quantize\\(x\\) -> xq\n"
              "vkd compile --no-fuse-epilogue: the first quantize is not its own op")
expect_stdout("not fused: q \\(node 0\\) into the load of q8ta_conv2d 'stem': epilogue"
              "vkd compile --no-fuse-epilogue: the first quantize is not reported as unfused")
string(CONCAT dw_pw_apart "not fused: depthwise q8ta_conv2d 'bottom_d' \\([^)]*\\) into "
       "q8ta_conv2d 'bottom' \\([^)]*\\): epilogue fusion is off")
expect_stdout("${dw_pw_apart}"
              "vkd compile --no-fuse-epilogue: the last depthwise -> 1x1 is not reported apart")
expect_stdout("\n  q8ta_conv2d\\(skip1_e, [^)]*\\) -> skip1_d\n"
              "vkd compile --no-fuse-epilogue: the first depthwise conv is not its own op")
expect_stdout("\n  q8ta_conv2d\\(stem, [^)]*\\) -> skip1_e\n"
              "vkd compile --no-fuse-epilogue: the first expansion conv is not its own op")
expect_stdout("\n  q8ta_conv2d\\(up4, [^)]*\\) -> logits_q\n"
              "vkd compile --no-fuse-epilogue: the head conv is not its own op")
if(STDOUT MATCHES "pixel-shuffled")
  message(FATAL_ERROR "vkd compile --no-fuse-epilogue: a pixel-shuffled 1x1 and head line")
endif()
file(MAKE_DIRECTORY "${WORK}/unfused")
run("${VKD}" run unfused.vkd --input x=image.npy --output-dir unfused)
expect_exit(0 "vkd run unfused.vkd")
run("${NPY_COMPARE}" out/logits.npy unfused/logits.npy)
expect_exit(0 "the logits with and without the epilogue fusions")
