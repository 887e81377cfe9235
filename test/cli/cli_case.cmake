# One test case of the vkd CLI (cmake -P). Runs `vkd` and checks the exit code, the message on
# stderr and the files left behind; any failed check is a FATAL_ERROR, so the test fails.
#
#   -DCASE=name        which case (see the if/elseif chain below; test/cli/CMakeLists.txt lists them)
#   -DVKD=path         the vkd binary
#   -DNPY_COMPARE=path exact .npy comparison tool
#   -DMAKE_V1_BLOB=path rewrites a blob as header version 1 (no checksums, no graph IR hash)
#   -DFIXTURE=dir      make_qcd_blob's output (model.vkd, x.npy, expected.npy, bad inputs)
#   -DWORK=dir         scratch directory of this case (emptied first)
#   -DSOURCE_DIR=dir   the source tree (graph IR files: test/cli/graphs, test/compiler/graphs)
#   -DVERSION=x.y.z    the project version (`vkd --version`)
#
# A case that cannot be set up on this machine prints VKD_CLI_SKIP (the test's
# SKIP_REGULAR_EXPRESSION) and stops.
cmake_minimum_required(VERSION 3.22)

foreach(_var CASE VKD NPY_COMPARE MAKE_V1_BLOB FIXTURE WORK SOURCE_DIR VERSION)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "cli_case.cmake: -D${_var}= missing")
  endif()
endforeach()

set(MODEL "${FIXTURE}/model.vkd")
set(X "${FIXTURE}/x.npy")
set(GRAPHS "${SOURCE_DIR}/test/cli/graphs")
set(QDQ_CLONE "${SOURCE_DIR}/test/compiler/graphs/qdq_clone.json")
set(OUT "${WORK}/out")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${OUT}")

# Escapes `str` for use inside a regular expression.
function(regex_escape out str)
  string(REGEX REPLACE "([][+.*()^$?|\\\\{}])" "\\\\\\1" escaped "${str}")
  set(${out} "${escaped}" PARENT_SCOPE)
endfunction()
regex_escape(WORK_RE "${WORK}")

# vkd(args...): runs vkd in WORK; sets RC, STDOUT, STDERR. A call that runs longer than
# VKD_TIMEOUT seconds is killed (RC then says so), so a case that reads an endless file fails
# instead of hanging.
set(VKD_TIMEOUT 240)
function(vkd)
  execute_process(COMMAND "${VKD}" ${ARGN}
    WORKING_DIRECTORY "${WORK}" TIMEOUT ${VKD_TIMEOUT}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " cmdline "${ARGN}")
  message("$ vkd ${cmdline}\n--- exit code ${rc}\n--- stdout:\n${out}--- stderr:\n${err}---")
  # (a vkd built with the sanitizers: test/cli's cli_sanitized_* tests)
  if(err MATCHES "(Address|Undefined|Leak)Sanitizer|runtime error: ")
    message(FATAL_ERROR "a sanitizer report")
  endif()
  set(RC "${rc}" PARENT_SCOPE)
  set(STDOUT "${out}" PARENT_SCOPE)
  set(STDERR "${err}" PARENT_SCOPE)
endfunction()

function(expect_exit code)
  if(NOT "${RC}" STREQUAL "${code}")
    message(FATAL_ERROR "expected exit code ${code}, got '${RC}'")
  endif()
endfunction()

function(expect_stderr regex)
  if(NOT "${STDERR}" MATCHES "${regex}")
    message(FATAL_ERROR "stderr does not match: ${regex}")
  endif()
endfunction()

function(expect_stdout regex)
  if(NOT "${STDOUT}" MATCHES "${regex}")
    message(FATAL_ERROR "stdout does not match: ${regex}")
  endif()
endfunction()

# `vkd compile --report` left no node as an edge op (for the host).
function(expect_no_host_step)
  if(STDOUT MATCHES "as edge ops")
    message(FATAL_ERROR "a node was left for the host")
  endif()
endfunction()

# The files in `dir` (hidden ones included) are exactly `names...` (none when empty).
function(expect_files dir)
  file(GLOB found RELATIVE "${dir}" "${dir}/*" "${dir}/.*")
  list(REMOVE_ITEM found "." "..")
  list(SORT found)
  set(want ${ARGN})
  list(SORT want)
  if(NOT "${found}" STREQUAL "${want}")
    message(FATAL_ERROR "files in ${dir}: '${found}', expected '${want}'")
  endif()
endfunction()

function(expect_file_content path content)
  file(READ "${path}" got)
  if(NOT "${got}" STREQUAL "${content}")
    message(FATAL_ERROR "${path} changed: '${got}'")
  endif()
endfunction()

function(expect_same_npy a b)
  execute_process(COMMAND "${NPY_COMPARE}" "${a}" "${b}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${a} differs from ${b}")
  endif()
endfunction()

# Copies `files...` into WORK, so vkd is given (and its messages name) bare file names.
function(copy_to_work)
  file(COPY ${ARGN} DESTINATION "${WORK}")
endfunction()

# WORK/`dst`: WORK/`src` with `from` replaced by `to` (which must occur, or the case would
# silently test the unchanged file).
function(derive_file src dst from to)
  file(READ "${WORK}/${src}" text)
  string(FIND "${text}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${src} does not contain '${from}'")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
  file(WRITE "${WORK}/${dst}" "${text}")
endfunction()

# WORK/`dst`: WORK/`src` as vkdelegate 0.1.0 wrote blobs (header version 1: no checksums, no
# graph IR hash, so `vkd run --check` takes any graph whose tensors fit it).
function(make_v1_blob src dst)
  execute_process(COMMAND "${MAKE_V1_BLOB}" "${WORK}/${src}" "${WORK}/${dst}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "make_v1_blob ${src} ${dst} failed")
  endif()
endfunction()

# The cases on the conv fixture (conv.safetensors, conv_x.npy): GRAPHS/`graph` compiled with
# those weights into `model` (--report), then run on conv_x.npy with --check against the graph,
# which must agree on every tensor. Macros, so that RC and STDOUT are the case's own for the
# expect_*() calls that follow.
macro(compile_conv_graph graph model)
  copy_to_work("${GRAPHS}/${graph}" "${FIXTURE}/conv.safetensors" "${FIXTURE}/conv_x.npy")
  vkd(compile ${graph} --weights conv.safetensors -o ${model} --report)
  expect_exit(0)
endmacro()
macro(run_checked_conv_graph graph model)
  vkd(run ${model} --input x=conv_x.npy --output-dir out --check ${graph} --weights conv.safetensors)
  expect_exit(0)
  expect_stdout("check: every compared tensor matches the reference\n")
endmacro()

set(SENTINEL "sentinel: must not be overwritten\n")

# Sets `var` to a directory no file can be created in: WORK/readonly (read-only) stops everyone
# but root; root gets EACCES on sysfs. A macro, so that it can stop the case with VKD_CLI_SKIP.
macro(find_unwritable_dir var)
  set(_ro "${WORK}/readonly")
  file(MAKE_DIRECTORY "${_ro}")
  file(CHMOD "${_ro}" PERMISSIONS OWNER_READ OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E touch "${_ro}/probe" RESULT_VARIABLE _ro_writable
                  OUTPUT_QUIET ERROR_QUIET)
  set(${var} "${_ro}")
  if(_ro_writable EQUAL 0)
    file(REMOVE "${_ro}/probe")
    execute_process(COMMAND "${CMAKE_COMMAND}" -E touch "/sys/vkd_cli_probe"
                    RESULT_VARIABLE _sys_writable OUTPUT_QUIET ERROR_QUIET)
    if(_sys_writable EQUAL 0 OR NOT IS_DIRECTORY "/sys")
      file(REMOVE "/sys/vkd_cli_probe")
      message("VKD_CLI_SKIP: no unwritable directory on this machine")
      return()
    endif()
    set(${var} "/sys")
  endif()
endmacro()

# Fails unless WORK/`name` still has the SHA-256 `sha` (taken before a command that must not
# touch it).
function(expect_unchanged name sha)
  file(SHA256 "${WORK}/${name}" now)
  if(NOT now STREQUAL sha)
    message(FATAL_ERROR "${name} was changed")
  endif()
endfunction()

# Makes the FIFO WORK/`name` (mkfifo), or stops the case with VKD_CLI_SKIP.
macro(make_fifo name)
  find_program(MKFIFO mkfifo)
  if(NOT MKFIFO)
    message("VKD_CLI_SKIP: no mkfifo on this machine")
    return()
  endif()
  execute_process(COMMAND "${MKFIFO}" "${WORK}/${name}" RESULT_VARIABLE _fifo_rc)
  if(NOT _fifo_rc EQUAL 0)
    message("VKD_CLI_SKIP: mkfifo failed")
    return()
  endif()
endmacro()

if(CASE STREQUAL "run_qcd")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --profile --bench 3 --trace t.json)
  expect_exit(0)
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/expected.npy")
  expect_files("${OUT}" y.npy)
  expect_stdout("device: [^\n]+\n")
  expect_stdout("memory: constants [^\n]+ intermediates [^\n]+ planned vs [^\n]+ naive")
  expect_stdout("load peak: ")
  expect_stdout("input  x: float32 \\[1,5,7,9\\]")
  expect_stdout("output y: float32 \\[1,5,7,9\\][^\n]* -> out/y.npy\n  min ")
  expect_stdout("\nrun: [0-9.]+ ms host wall \\(execute\\), GPU [0-9.]+ µs over 3 dispatch nodes\n")
  expect_stdout("bench: 3 warm-up \\+ 3 timed runs: host wall median [0-9.]+ ms, min [0-9.]+ ms; then 3 profiled: GPU total median")
  expect_stdout("\nbench: host phases median: input copy [0-9.]+ µs, submit -> fence [0-9.]+ µs, output copy [0-9.]+ µs\n")
  expect_stdout("\nbench: GPU median: span [0-9.]+ µs \\(first dispatch start to last dispatch end, only those timestamps\\), staging copies in [0-9.]+ / out [0-9.]+ µs; host wall [0-9.]+ ms\n")
  expect_stdout("\nbench: GPU median with a timestamp pair around every dispatch: span [0-9.]+ µs \\(the pairs serialize the dispatches\\), host wall [0-9.]+ ms\n")
  expect_stdout("\nbench: zero-copy \\(staging views for 1 of 1 inputs, 1 of 1 outputs\\): host wall median [0-9.]+ ms, min [0-9.]+ ms; submit -> fence median [0-9.]+ µs\n")
  expect_stdout("profile \\(last run, [0-9]+ dispatch nodes\\)")
  foreach(op q8ta_quantize q8ta_convert q8ta_dequantize)
    expect_stdout("\n +[0-9]+  ${op} ")
  endforeach()
  expect_stdout("total +[0-9.]+  100.0%")
  expect_stdout("validation: no messages")
  if(STDERR MATCHES "differs from the first run")
    message(FATAL_ERROR "benchmark runs gave different outputs")
  endif()
  # The trace: the Trace Event Format object, the host event and one event per node.
  expect_files("${WORK}" out t.json)
  file(READ "${WORK}/t.json" trace)
  if(NOT trace MATCHES "^{\"displayTimeUnit\": \"ms\", \"traceEvents\": \\[\n" OR
     NOT trace MATCHES "\"name\": \"execute\", \"cat\": \"host\", \"ph\": \"X\", \"ts\": 0.000, \"dur\": [0-9.]+" OR
     NOT trace MATCHES "\"name\": \"q8ta_quantize\", \"cat\": \"gpu\", \"ph\": \"X\", \"ts\": 0.000, \"dur\": [0-9.]+" OR
     NOT trace MATCHES "\"name\": \"q8ta_dequantize\", \"cat\": \"gpu\", \"ph\": \"X\"" OR
     NOT trace MATCHES "\n\\]}\n$")
    message(FATAL_ERROR "t.json is not the expected trace:\n${trace}")
  endif()

elseif(CASE STREQUAL "run_force")
  file(WRITE "${OUT}/y.npy" "${SENTINEL}")
  vkd(run "${MODEL}" --input "input0=${X}" --output-dir out --force)  # position works too
  expect_exit(0)
  # No --bench/--profile/--trace: the run executes without timestamp queries.
  expect_stdout("\nrun: [0-9.]+ ms host wall \\(execute\\), GPU not timed \\(--bench, --profile and --trace time it\\)\n")
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/expected.npy")
  expect_files("${OUT}" y.npy)

elseif(CASE STREQUAL "positional_names")
  # Unnamed inputs/outputs go by input<i>/output<i>; an int8 input and an int8 output.
  vkd(run "${FIXTURE}/model_multi.vkd" --input "input1=${FIXTURE}/expected_q.npy"
      --input "input0=${X}" --output-dir out)
  expect_exit(0)
  expect_same_npy("${OUT}/q.npy" "${FIXTURE}/expected_q.npy")
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/expected.npy")
  expect_files("${OUT}" q.npy y.npy)
  expect_stdout("output q: int8 \\[1,5,7,9\\]  \\(device: int8x4 buffer [^\n]*\n  min -128  max 127  mean ")
  expect_stdout("input  [^:]+: int8 \\[1,5,7,9\\][^\n]*expected_q.npy\n")
  vkd(run "${FIXTURE}/model_multi.vkd" --input "input0=${X}" --input "x=${X}" --output-dir out)
  expect_exit(2)
  expect_stderr("unknown input 'x' from [^\n]*x.npy: the model has no input of that name; its inputs: '[^']+' \\(input0\\) float32 \\[1,5,7,9\\], '[^']+' \\(input1\\) int8 \\[1,5,7,9\\]\n")
  expect_stderr("missing input '[^']+' \\(input1\\): int8 \\[1,5,7,9\\]; pass --input ")

elseif(CASE STREQUAL "inspect_qcd")
  vkd(inspect "${MODEL}")
  expect_exit(0)
  expect_stdout("device: ")
  expect_stdout("inputs \\(1\\):\n  \\[0\\] x: float32 \\[1,5,7,9\\]  \\(device: float32 buffer ")
  expect_stdout("outputs \\(1\\):\n  \\[0\\] y: float32 \\[1,5,7,9\\]")
  expect_stdout("memory: constants ")
  expect_stdout("load peak: ")
  expect_stdout("q8ta_quantize")
  expect_stdout("q8ta_convert")
  expect_stdout("q8ta_dequantize")
  expect_files("${WORK}" out)

elseif(CASE STREQUAL "inspect_dot")
  vkd(inspect "${MODEL}" --dot g.dot)
  expect_exit(0)
  expect_stdout("^dot: wrote g.dot \\(3 op calls\\)\nmodel: ")
  expect_stdout("\ninputs \\(1\\):\n  \\[0\\] x: ")  # then the usual report
  expect_files("${WORK}" g.dot out)  # no temporary file left
  file(READ "${WORK}/g.dot" dot)
  set(checks
    "^// [^\n]*\ndigraph vkd {\n"
    "\n    legend_5 \\[label=\"4C1W\", style=filled, fillcolor=\"#8dd3c7\"\\];\n"
    "\n  t0 \\[label=\"x\\\\n\\[1,5,7,9\\] float32 buffer width_packed\\\\ngraph input 0\", style=filled, fillcolor=\"#80b1d3\", peripheries=2\\];\n"
    "\n  t2 \\[label=\"q_4c1w\\\\n\\[1,5,7,9\\] int8x4 buffer 4C1W\", style=filled, fillcolor=\"#8dd3c7\"\\];\n"
    "\n  op0 \\[shape=box, label=\"q8ta_quantize\", style=\"rounded,filled\", fillcolor=\"#f5f5f5\"\\];\n"
    "\n  op1 \\[shape=box, label=\"q8ta_convert\\\\ninserted conversion\", style=\"bold,filled\", fillcolor=\"#fde0dd\", color=red, fontcolor=red, penwidth=3\\];\n"
    "\n  op2 \\[shape=box, label=\"q8ta_dequantize\", style=\"rounded,filled\", fillcolor=\"#f5f5f5\"\\];\n"
    "\n  t0 -> op0;\n  op0 -> t1;\n  t1 -> op1;\n  op1 -> t2;\n  t2 -> op2;\n  op2 -> t3;\n}\n$")
  foreach(check IN LISTS checks)
    if(NOT dot MATCHES "${check}")
      message(FATAL_ERROR "g.dot does not match: ${check}\n${dot}")
    endif()
  endforeach()
  # Graphviz, where installed, must take the file without a warning.
  find_program(DOT_TOOL dot)
  if(DOT_TOOL)
    execute_process(COMMAND "${DOT_TOOL}" -Tsvg -o "${WORK}/g.svg" "${WORK}/g.dot"
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
      message(FATAL_ERROR "dot rejects g.dot (exit ${rc}): ${err}")
    endif()
    file(REMOVE "${WORK}/g.svg")
  endif()
  # The picture is written before the device is touched: a device that does not exist fails
  # the load, not the picture.
  vkd(inspect "${MODEL}" --dot g2.dot --device no-such-device)
  expect_exit(2)
  expect_stderr("vkd inspect: cannot load model [^\n]*: no Vulkan device matches 'no-such-device'")
  expect_file_content("${WORK}/g2.dot" "${dot}")
  # A file that is not a blob, a directory that does not exist: exit 2, nothing written.
  vkd(inspect "${X}" --dot g3.dot)
  expect_exit(2)
  expect_stderr("^vkd inspect: cannot read model file '[^\n]*x.npy': it is not a vkdelegate blob\n$")
  vkd(inspect "${MODEL}" --dot nodir/g3.dot)
  expect_exit(2)
  expect_stderr("^vkd inspect: dot file: cannot write 'nodir/g3.dot': directory 'nodir' does not exist\n$")
  expect_files("${WORK}" g.dot g2.dot out)

elseif(CASE STREQUAL "inspect_dot_existing")
  file(WRITE "${WORK}/g.dot" "${SENTINEL}")
  vkd(inspect "${MODEL}" --dot g.dot)
  expect_exit(2)
  expect_stderr("^vkd inspect: dot file: 'g.dot' already exists \\(pass --force to overwrite\\)\n$")
  expect_stdout("^$")  # refused before the model is loaded
  expect_file_content("${WORK}/g.dot" "${SENTINEL}")
  expect_files("${WORK}" g.dot out)
  vkd(inspect "${MODEL}" --force)
  expect_exit(2)
  expect_stderr("^vkd inspect: --force applies to --dot only\nusage: vkd")
  vkd(inspect "${MODEL}" --dot g.dot --force)
  expect_exit(0)
  file(READ "${WORK}/g.dot" dot)
  if(NOT dot MATCHES "\ndigraph vkd {\n")
    message(FATAL_ERROR "--force did not replace g.dot:\n${dot}")
  endif()
  expect_files("${WORK}" g.dot out)

elseif(CASE STREQUAL "missing_input")
  vkd(run "${MODEL}" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: missing input 'x' \\(input0\\): float32 \\[1,5,7,9\\]; pass --input x=FILE.npy\n")
  expect_files("${OUT}")

elseif(CASE STREQUAL "extra_input")
  vkd(run "${MODEL}" --input "x=${X}" --input "z=${X}" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: unknown input 'z' from [^\n]*x.npy: the model has no input of that name; its inputs: 'x' \\(input0\\) float32 \\[1,5,7,9\\]\n")
  expect_files("${OUT}")

elseif(CASE STREQUAL "duplicate_input")
  vkd(run "${MODEL}" --input "x=${X}" --input "x=${X}" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: input 'x' \\(input0\\) given more than once: [^\n]*x.npy, [^\n]*x.npy\n")
  expect_files("${OUT}")

elseif(CASE STREQUAL "wrong_shape")
  vkd(run "${MODEL}" --input "x=${FIXTURE}/x_shape.npy" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: input 'x' \\(input0\\) from [^\n]*x_shape.npy: wrong shape: the model expects \\[1,5,7,9\\], the file has \\[1,5,7,8\\]\n")
  expect_files("${OUT}")

elseif(CASE STREQUAL "wrong_dtype")
  vkd(run "${MODEL}" --input "x=${FIXTURE}/x_int32.npy" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: input 'x' \\(input0\\) from [^\n]*x_int32.npy: wrong dtype: the model expects float32, the file has int32\n")
  expect_files("${OUT}")

elseif(CASE STREQUAL "truncated_input")
  vkd(run "${MODEL}" --input "x=${FIXTURE}/x_truncated.npy" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: input 'x': [^\n]*x_truncated.npy: truncated data: shape \\(1, 5, 7, 9\\) float32 needs 1260 bytes")
  expect_files("${OUT}")

elseif(CASE STREQUAL "existing_output")
  file(WRITE "${OUT}/y.npy" "${SENTINEL}")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --trace t.json)
  expect_exit(2)
  expect_stderr("vkd run: output 'y': 'out/y.npy' already exists \\(pass --force to overwrite\\)")
  expect_file_content("${OUT}/y.npy" "${SENTINEL}")
  expect_files("${OUT}" y.npy)
  expect_files("${WORK}" out)  # no trace either

elseif(CASE STREQUAL "existing_trace")
  file(WRITE "${WORK}/t.json" "${SENTINEL}")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --trace t.json)
  expect_exit(2)
  expect_stderr("vkd run: trace: 't.json' already exists \\(pass --force to overwrite\\)")
  expect_file_content("${WORK}/t.json" "${SENTINEL}")
  expect_files("${OUT}")

elseif(CASE STREQUAL "missing_model")
  vkd(run "${WORK}/no/such/model.vkd" --input "x=${X}" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: cannot read model file '${WORK_RE}/no/such/model.vkd': no such file")
  vkd(inspect "${WORK}/no/such/model.vkd")
  expect_exit(2)
  expect_stderr("vkd inspect: cannot read model file '${WORK_RE}/no/such/model.vkd': no such file")
  expect_files("${OUT}")

elseif(CASE STREQUAL "missing_output_dir")
  # Only the last directory is created: a missing parent is exit 2, nothing created.
  vkd(run "${MODEL}" --input "x=${X}" --output-dir nope/deeper)
  expect_exit(2)
  expect_stderr("^vkd run: output directory 'nope/deeper' does not exist and cannot be created: directory 'nope' does not exist\n$")
  file(WRITE "${WORK}/plain_file" "x")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir plain_file)
  expect_exit(2)
  expect_stderr("vkd run: output directory 'plain_file' is not a directory")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir plain_file/sub)
  expect_exit(2)
  expect_stderr("^vkd run: output directory 'plain_file/sub' does not exist and cannot be created: directory 'plain_file' is not a directory\n$")
  expect_files("${WORK}" out plain_file)

elseif(CASE STREQUAL "unwritable_output_dir")
  find_unwritable_dir(target)
  vkd(run "${MODEL}" --input "x=${X}" --output-dir "${target}")
  file(CHMOD "${WORK}/readonly" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  expect_exit(2)
  regex_escape(target_re "${target}")
  expect_stderr("vkd run: output directory '${target_re}' is not writable: ")
  expect_files("${WORK}/readonly")

elseif(CASE STREQUAL "bad_bench")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --bench 0)
  expect_exit(2)
  expect_stderr("vkd run: --bench needs a whole number in \\[1, 1000000\\], got '0'")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --bogus)
  expect_exit(2)
  expect_stderr("vkd run: unknown option '--bogus' \\(options: --input, [^\n]+\\)\nusage: vkd")
  vkd(run "${MODEL}" --input "x" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: --input needs NAME=FILE.npy, got 'x'")
  expect_files("${OUT}")

elseif(CASE STREQUAL "compile_ok")
  copy_to_work("${QDQ_CLONE}")
  vkd(compile qdq_clone.json -o m.vkd)
  expect_exit(0)
  expect_stdout("^wrote m.vkd \\([0-9]+ bytes, 3 nodes\\)\n$")
  expect_files("${WORK}" m.vkd out qdq_clone.json)  # no temporary file left
  vkd(run m.vkd --input "x=${X}" --output-dir out)
  expect_exit(0)
  expect_files("${OUT}" y.npy)
  # x is clamped by the first quantize (scale 0.0375, zero point -3, [-128, 127]) to
  # [-4.6875, 4.875]; the second (0.05, 4, [-100, 100]) maps that to codes -90 .. 102 -> 100,
  # so y spans (-90 - 4) * 0.05 .. (100 - 4) * 0.05.
  expect_stdout("output y: float32 \\[1,5,7,9\\][^\n]* -> out/y.npy\n  min -4.7  max 4.8  mean ")
  vkd(compile qdq_clone.json -o m.vkd --force)
  expect_exit(0)
  expect_files("${WORK}" m.vkd out qdq_clone.json)

elseif(CASE STREQUAL "device_class")
  # vkd compile --target: a class's texture extent; an unknown class is a usage error naming
  # the classes, and nothing is written.
  copy_to_work("${QDQ_CLONE}")
  vkd(compile qdq_clone.json -o m.vkd --target phone)
  expect_exit(2)
  expect_stderr("--target: unknown device class 'phone'; the classes are: android-baseline-2022, ")
  expect_files("${WORK}" out qdq_clone.json)
  vkd(compile qdq_clone.json -o m.vkd --target android-baseline-2022)
  expect_exit(0)
  expect_stdout("target android-baseline-2022: the blob loads as the class on [^\n]+; 0 way\\(s\\) down\n")
  # A fused residual add binds 5 storage buffers, one more than the class allows: the blob is
  # loaded as the class before it is written, and --report names the way down its kernel takes
  # there; vkd inspect under the class lists it, runs there match the reference interpreter.
  copy_to_work("${GRAPHS}/residual_conv.json" "${GRAPHS}/pixel_shuffle_f16.json"
               "${FIXTURE}/conv.safetensors" "${FIXTURE}/conv_x.npy")
  vkd(compile residual_conv.json --weights conv.safetensors -o rc.vkd --target android-baseline-2022
      --report)
  expect_exit(0)
  expect_stdout("into the epilogue of q8ta_conv2d 'cq': q8ta_conv2d_add adds 'xq' and writes 'aq'")
  expect_stdout("\ntarget android-baseline-2022: the blob loads as the class on [^\n]+; 1 way\\(s\\) down\n"
                "  way down: q8ta_conv2d_add 'aq': the output into 'aq.before_add', then the add on "
                "its own \\(the fused kernel binds 5 storage buffers; the device's "
                "maxPerStageDescriptorStorageBuffers is 4\\)\n")
  vkd(inspect rc.vkd)
  expect_exit(0)
  expect_stdout("\n  ways down \\(0\\): none, every kernel fits the device\n")
  # A class that cannot run the blob (float16 storage, which the baseline lacks): refused by
  # name, nothing written.
  vkd(compile pixel_shuffle_f16.json -o f16.vkd --target android-baseline-2022)
  expect_exit(2)
  expect_stderr("pixel_shuffle_f16.json: the blob cannot run on device class android-baseline-2022 "
                "\\(unsupported, loaded as the class here\\): op 0 'pixel_shuffle': kernel "
                "[^\n]+ needs 16-bit storage[^\n]+; nothing written\n$")
  expect_files("${WORK}" out qdq_clone.json m.vkd residual_conv.json pixel_shuffle_f16.json
               conv.safetensors conv_x.npy rc.vkd)
  # The runtime under the class (VKD_DEVICE_CLASS): the profile says so, the blob runs.
  set(ENV{VKD_DEVICE_CLASS} android-baseline-2022)
  vkd(devices)
  expect_exit(0)
  expect_stdout("as device class android-baseline-2022 [^\n]*\n  Vulkan 1\\.1\\.")
  expect_stdout("shared memory 16384 B[^\n]* per stage 4 storage buffers and 4 storage images")
  vkd(run m.vkd --input "x=${X}" --output-dir out)
  expect_exit(0)
  expect_files("${OUT}" y.npy)
  vkd(inspect rc.vkd)
  expect_exit(0)
  expect_stdout("\n  ways down \\(1\\):\n    q8ta_conv2d_add 'aq': the output into 'aq.before_add'")
  vkd(run rc.vkd --input x=conv_x.npy --output-dir out --force --check residual_conv.json
      --weights conv.safetensors)
  expect_exit(0)
  expect_stdout("check: every compared tensor matches the reference\n")
  set(ENV{VKD_DEVICE_CLASS} phone)
  vkd(devices)
  expect_exit(2)
  expect_stderr("VKD_DEVICE_CLASS: unknown device class 'phone'; the classes are: ")
  unset(ENV{VKD_DEVICE_CLASS})
  vkd(devices --quirks)
  expect_exit(0)
  expect_stdout("amd-proprietary-int8-dot\n  devices: [^\n]+\n  symptom: [^\n]+\n  workaround: ")

elseif(CASE STREQUAL "compile_partition")
  copy_to_work("${SOURCE_DIR}/test/compiler/graphs/qdq_maxpool.json")
  vkd(compile qdq_maxpool.json --partition -o m.vkd)
  expect_exit(0)
  expect_stdout("wrote m.p0.vkd \\([0-9]+ bytes, 2 nodes\\)\nwrote m.p1.vkd \\([0-9]+ bytes, 2 nodes\\)\n"
                "wrote m.partition.json \\(2 partition\\(s\\), 1 host node\\(s\\)\\)\n$")
  expect_files("${WORK}" m.p0.vkd m.p1.vkd m.partition.json out qdq_maxpool.json)
  file(READ "${WORK}/m.partition.json" plan)
  foreach(part "\"delegate\": \"m.p0.vkd\"" "\"host\": \"aten.max_pool2d\""
               "\"origin\": \"node 3 \\(aten.max_pool2d\\)\"" "\"delegate\": \"m.p1.vkd\"")
    if(NOT plan MATCHES "${part}")
      message(FATAL_ERROR "m.partition.json lacks ${part}:\n${plan}")
    endif()
  endforeach()
  # Each partition is a model of its own.
  vkd(inspect m.p1.vkd)
  expect_exit(0)
  expect_stdout("\\[0\\] m: float32 \\[1,4,3,5\\]")
  # Every target is checked before anything is written.
  file(WRITE "${WORK}/m.p1.vkd" "${SENTINEL}")
  file(SHA256 "${WORK}/m.p0.vkd" p0_before)
  vkd(compile qdq_maxpool.json --partition -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: output: 'm.p0.vkd' already exists \\(pass --force to overwrite\\)\n"
                "vkd compile: output: 'm.p1.vkd' already exists \\(pass --force to overwrite\\)\n"
                "vkd compile: output: 'm.partition.json' already exists \\(pass --force to overwrite\\)\n$")
  expect_file_content("${WORK}/m.p1.vkd" "${SENTINEL}")
  file(SHA256 "${WORK}/m.p0.vkd" p0_after)
  if(NOT p0_before STREQUAL p0_after)
    message(FATAL_ERROR "m.p0.vkd changed")
  endif()

elseif(CASE STREQUAL "compile_partition_refused")
  # Nodes neither the backend nor the host (the reference interpreter) can run: every one named
  # with both reasons, exit 2, nothing written (no blob, no plan), as vkd run would refuse the
  # plan at load.
  copy_to_work("${GRAPHS}/host_refused.json")
  vkd(compile host_refused.json --partition -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: host_refused.json: 3 node\\(s\\) can run neither on the backend nor on the host:\n"
                "vkd compile:   node 2 \\(aten.cumsum\\): not supported by the backend \\(no fusion pattern or backend op for 'aten.cumsum'\\); the host cannot run it: the CPU reference interpreter has no function for 'aten.cumsum'\n"
                "vkd compile:   node 3 \\(torchao.dequantize_affine\\): not yet supported by the backend \\(no fusion pattern or backend op for 'torchao.dequantize_affine'\\); the host cannot run it: zero_point_domain 'FLOAT' \\(only INT is supported\\)\n"
                "vkd compile:   node 4 \\(aten.frobnicate\\): not supported by the backend \\(no fusion pattern or backend op for 'aten.frobnicate'\\); the host cannot run it: the CPU reference interpreter has no function for 'aten.frobnicate'\n$")
  expect_stdout("^$")
  expect_files("${WORK}" host_refused.json out)
  # With --force over an earlier plan: the refusal leaves it as it was.
  file(WRITE "${WORK}/m.partition.json" "${SENTINEL}")
  vkd(compile host_refused.json --partition -o m.vkd --force)
  expect_exit(2)
  expect_file_content("${WORK}/m.partition.json" "${SENTINEL}")
  expect_files("${WORK}" host_refused.json m.partition.json out)
  # What the host has references for is written and runs: a float layer_norm over two dims (the
  # GPU's normalizes the last dim alone) and softmax over channels, each a host step, with the
  # float mul.Tensor between them on the GPU (float_mul).
  copy_to_work("${GRAPHS}/host_runs.json" "${FIXTURE}/part_pool_x.npy")
  vkd(compile host_runs.json --partition -o h.vkd)
  expect_exit(0)
  expect_stdout("\nwrote h.partition.json \\(2 partition\\(s\\), 2 host node\\(s\\)\\)\n$")
  vkd(run h.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(0)
  expect_stdout("\nstep 1  host  aten.layer_norm +xd -> n +CPU [^\n]+\nstep 2  GPU   h.p1.vkd +n, xd -> p +GPU [^\n]+\nstep 3  host  aten._softmax +p -> y +CPU ")
  expect_files("${OUT}" y.npy)

elseif(CASE STREQUAL "run_partitioned")
  # The compile_partition graph run whole: two partitions on the GPU, the max_pool between them
  # on the host; the output equals the reference interpreter's on the original graph.
  copy_to_work("${SOURCE_DIR}/test/compiler/graphs/qdq_maxpool.json" "${FIXTURE}/part_pool_x.npy")
  vkd(compile qdq_maxpool.json --partition -o m.vkd)
  expect_exit(0)
  vkd(run m.partition.json --input x=part_pool_x.npy --output-dir out --profile --bench 2)
  expect_exit(0)
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/part_pool_expected.npy")
  expect_files("${OUT}" y.npy)
  expect_stdout("^model: m.partition.json \\(3 step\\(s\\): 2 partition\\(s\\) on the GPU, 1 on the host\\), 1 input\\(s\\), 1 output\\(s\\)\n")
  expect_stdout("\nstep 0 \\(GPU m.p0.vkd\\):\n  memory: ")
  expect_stdout("\ninput  x: float32 \\[1,4,6,10\\]  \\(device: float32 [^\n]+ <- part_pool_x.npy\n")
  expect_stdout("\nstep 0  GPU   m.p0.vkd +x -> xd +GPU [^\n]+ over 2 dispatch node\\(s\\), execute [0-9.]+ ms host wall\n"
                "step 1  host  aten.max_pool2d +xd -> m +CPU [0-9.]+ [^\n]+ \\(node 3 \\(aten.max_pool2d\\), reference interpreter\\)\n"
                "step 2  GPU   m.p1.vkd +m -> y +GPU [^\n]+ over 2 dispatch node\\(s\\), execute [0-9.]+ ms host wall\n"
                "run: 3 step\\(s\\) in [0-9.]+ ms host wall: GPU [^\n]+ over 4 dispatch nodes, host steps [0-9.]+ ")
  # The host wall of runs without GPU timestamps (as an app runs), the GPU total of profiled
  # ones (the timestamps serialize the dispatches); --profile prints the last profiled run.
  expect_stdout("\nbench: 3 warm-up \\+ 2 timed runs of every step, no GPU timestamps: host wall "
                "median [0-9.]+ ms, min [0-9.]+ ms; then 2 profiled: GPU total median [0-9.]+ "
                "µs, min [0-9.]+ µs\n")
  expect_stdout("\noutput y: float32 \\[1,4,3,5\\][^\n]* -> out/y.npy\n  min ")
  expect_stdout("\nstep 2 \\(GPU m.p1.vkd\\) profile \\(last run, 2 dispatch nodes\\):\n")
  expect_stdout("validation: no messages\n$")
  # A host step that reads a constant: float add of a [1,1,4,1,1] weight (a rank-5 result, which
  # no device tensor holds), from --weights (the
  # original graph's weights) by the tensor name the plan gives under "data" ("add.other").
  copy_to_work("${GRAPHS}/add_constant.json" "${FIXTURE}/weights.safetensors"
               "${FIXTURE}/host.safetensors" "${FIXTURE}/part_add_x.npy")
  vkd(compile add_constant.json --weights weights.safetensors --partition -o a.vkd)
  expect_exit(0)
  vkd(run a.partition.json --input x=part_add_x.npy --output-dir out --weights weights.safetensors
      --force)
  expect_exit(0)
  expect_stdout("\nstep 1  host  aten.add.Tensor +xd, other -> s +CPU ")
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/part_add_expected.npy")
  # A plan without "data" looks the constant up by its value's name (host.safetensors: "other").
  derive_file(a.partition.json nodata.partition.json ",\n      \"data\": \"add.other\"" "")
  vkd(run nodata.partition.json --input x=part_add_x.npy --output-dir out
      --weights host.safetensors --force)
  expect_exit(0)
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/part_add_expected.npy")
  # A .vkd still runs as before, and --weights still needs --check there.
  vkd(run m.p0.vkd --input x=part_pool_x.npy --output-dir out --force)
  expect_exit(0)
  expect_stdout("^model: m.p0.vkd \\(")
  vkd(run m.p0.vkd --input x=part_pool_x.npy --output-dir out --force --weights host.safetensors)
  expect_exit(2)
  expect_stderr("^vkd run: --weights is only used with --check \\(or with a partitioned model\\)\n")
  # --weights for a plan whose host steps read no constant: run, with one line saying so.
  vkd(run m.partition.json --input x=part_pool_x.npy --output-dir out --force
      --weights weights.safetensors)
  expect_exit(0)
  expect_stderr("^vkd run: note: --weights weights.safetensors is unused: no host step of m.partition.json reads a constant\n$")
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/part_pool_expected.npy")

elseif(CASE STREQUAL "run_partitioned_errors")
  # Every error names the plan, the step and the file or tensor; nothing is written.
  copy_to_work("${SOURCE_DIR}/test/compiler/graphs/qdq_maxpool.json" "${FIXTURE}/part_pool_x.npy"
               "${GRAPHS}/add_constant.json" "${FIXTURE}/weights.safetensors"
               "${FIXTURE}/part_add_x.npy")
  vkd(compile qdq_maxpool.json --partition -o m.vkd)
  expect_exit(0)
  # A step that reads a tensor before any step writes it.
  derive_file(m.partition.json order.partition.json
              "\"host\": \"aten.max_pool2d\",\n      \"inputs\": [\n        \"xd\""
              "\"host\": \"aten.max_pool2d\",\n      \"inputs\": [\n        \"y\"")
  vkd(run order.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: order.partition.json: step 1 \\(host node 3 \\(aten.max_pool2d\\)\\): reads tensor 'y' before anything writes it \\(step 2 \\(GPU m.p1.vkd\\) writes it later\\)\n$")
  # A step that reads a tensor the plan does not describe.
  derive_file(m.partition.json undefined.partition.json
              "\"host\": \"aten.max_pool2d\",\n      \"inputs\": [\n        \"xd\""
              "\"host\": \"aten.max_pool2d\",\n      \"inputs\": [\n        \"xq\"")
  vkd(run undefined.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: undefined.partition.json: step 1 \\(host node 3 \\(aten.max_pool2d\\)\\): reads tensor 'xq', which 'tensors' does not describe\n$")
  # A missing partition file (checked before the device is touched).
  file(RENAME "${WORK}/m.p1.vkd" "${WORK}/moved.vkd")
  vkd(run m.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: m.partition.json: step 2 \\(GPU m.p1.vkd\\): cannot read model file 'm.p1.vkd': no such file\n$")
  expect_stdout("^$")
  # A graph is not a plan; --check and --trace take a .vkd.
  vkd(run qdq_maxpool.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: qdq_maxpool.json: not a partition plan \\(no 'vkd_partition' field; ")
  vkd(run m.partition.json --input x=part_pool_x.npy --check qdq_maxpool.json)
  expect_exit(2)
  expect_stderr("^vkd run: --check takes a .vkd model; not a partitioned model yet\nusage: vkd run ")
  # Host constants: --weights missing, or a file without the value's name.
  vkd(compile add_constant.json --weights weights.safetensors --partition -o a.vkd)
  expect_exit(0)
  vkd(run a.partition.json --input x=part_add_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: a.partition.json: step 1 \\(host node 2 \\(aten.add.Tensor\\)\\) reads constant 'other': pass --weights W.safetensors \\(the original graph's weights\\)\n$")
  copy_to_work("${FIXTURE}/host.safetensors")
  vkd(run a.partition.json --input x=part_add_x.npy --output-dir out --weights host.safetensors)
  expect_exit(2)
  expect_stderr("^vkd run: a.partition.json: step 1 \\(host node 2 \\(aten.add.Tensor\\)\\): constant 'other': no tensor 'add.other' in host.safetensors \\(the name the plan gives under 'data'\\)\n$")
  # Inputs are matched to the plan's as to a .vkd's.
  vkd(run a.partition.json --input x=part_pool_x.npy --output-dir out --weights weights.safetensors)
  expect_exit(2)
  expect_stderr("^vkd run: input 'x' \\(input0\\) from part_pool_x.npy: wrong shape: the model expects \\[1,4,4,4\\], the file has \\[1,4,6,10\\]\n$")
  expect_files("${OUT}")

elseif(CASE STREQUAL "run_plan_untrusted")
  # A plan is untrusted input: sizes past the caps, blobs outside its directory, through a link
  # or not a blob, deep nesting: exit 2, one line naming the problem, before the device.
  copy_to_work("${SOURCE_DIR}/test/compiler/graphs/qdq_maxpool.json" "${FIXTURE}/part_pool_x.npy")
  vkd(compile qdq_maxpool.json --partition -o m.vkd)
  expect_exit(0)
  # [2^62 + 1, 240] has "240" elements in int64 arithmetic, those of the input [1,4,6,10]: the
  # host cat of two such views wrote past its 960-byte buffers (SIGSEGV); now the plan is
  # refused when it is read.
  file(WRITE "${WORK}/cat.partition.json" [=[
{"vkd_partition": 1, "inputs": ["x"], "outputs": ["y"],
 "steps": [{"host": "aten.view_copy", "inputs": ["x"], "args": {"size": [4611686018427387905, 240]}, "outputs": ["v"]},
           {"host": "aten.cat", "inputs": ["v", "v"], "args": {"dim": 1}, "outputs": ["c"]},
           {"host": "aten.view_copy", "inputs": ["c"], "args": {"size": [1, 4, 6, 20]}, "outputs": ["y"]}],
 "tensors": {"x": {"dtype": "float32", "shape": [1, 4, 6, 10]},
             "v": {"dtype": "float32", "shape": [4611686018427387905, 240]},
             "c": {"dtype": "float32", "shape": [4611686018427387905, 480]},
             "y": {"dtype": "float32", "shape": [1, 4, 6, 20]}}}
]=])
  vkd(run cat.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: cat.partition.json: tensor 'v': field 'shape' \\[4611686018427387905,240\\]: the product of the sizes \\(numel\\) is above the limit of 2\\^31 - 1 elements per tensor\n$")
  # The graph IR that made such a plan: the view's rule refuses the size.
  file(WRITE "${WORK}/view.json" [=[
{"vkd_graph": 1, "inputs": ["x"], "outputs": ["y"], "values": {"x": {"dtype": "float32", "shape": [1, 4]}},
 "nodes": [{"op": "aten.view_copy", "inputs": ["x"], "args": {"size": [4611686018427387905, 4]}, "outputs": ["v"]},
           {"op": "aten.view_copy", "inputs": ["v"], "args": {"size": [1, 4]}, "outputs": ["y"]}]}
]=])
  vkd(compile view.json --partition -o v.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: view.json: node 0 \\(aten.view_copy\\): argument 'size': \\[4611686018427387905, 4\\] has more elements than a tensor may \\(2147483647\\)\n$")
  # Blobs are plain file names in the plan's directory.
  foreach(name ../m.p0.vkd /etc/passwd sub/m.p0.vkd)
    derive_file(m.partition.json outside.partition.json "\"m.p0.vkd\"" "\"${name}\"")
    vkd(run outside.partition.json --input x=part_pool_x.npy --output-dir out)
    expect_exit(2)
    regex_escape(name_re "${name}")
    expect_stderr("^vkd run: outside.partition.json: step 0: field 'delegate': '${name_re}' is not a plain file name \\(a plan's blobs are files of its own directory: no '/', '.' or '..'\\)\n$")
  endforeach()
  # ... never a symbolic link (even to a blob beside it) ...
  file(CREATE_LINK m.p0.vkd "${WORK}/link.vkd" SYMBOLIC)
  derive_file(m.partition.json link.partition.json "\"m.p0.vkd\"" "\"link.vkd\"")
  vkd(run link.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: link.partition.json: step 0 \\(GPU link.vkd\\): cannot read model file 'link.vkd': it is a symbolic link\n$")
  # ... and a blob: another file is neither read whole nor quoted.
  file(WRITE "${WORK}/notes.txt" "root:x:0:0:root:/root:/bin/bash\n")
  derive_file(m.partition.json notes.partition.json "\"m.p0.vkd\"" "\"notes.txt\"")
  vkd(run notes.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: notes.partition.json: step 0 \\(GPU notes.txt\\): cannot read model file 'notes.txt': it is not a vkdelegate blob\n$")
  # The same for a model named on the command line (the message showed its first bytes).
  vkd(run notes.txt --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: cannot read model file 'notes.txt': it is not a vkdelegate blob\n$")
  # 70,000 nested brackets (140 KB) overflowed the stack; the depth is capped at 64.
  string(REPEAT "[" 70000 open)
  string(REPEAT "]" 70000 close)
  file(WRITE "${WORK}/deep.partition.json" "{\"vkd_partition\": 1, \"inputs\": ${open}${close}}")
  vkd(run deep.partition.json --input x=part_pool_x.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: deep.partition.json: JSON nested deeper than 64 levels \\(arrays and objects\\)\n$")
  vkd(inspect deep.partition.json)
  expect_exit(2)
  expect_stderr("^vkd inspect: deep.partition.json: JSON nested deeper than 64 levels ")
  expect_files("${OUT}")

elseif(CASE STREQUAL "inspect_partitioned")
  # inspect takes what run takes: every step and where it runs, the tensors between them.
  copy_to_work("${SOURCE_DIR}/test/compiler/graphs/qdq_maxpool.json" "${GRAPHS}/add_constant.json"
               "${FIXTURE}/weights.safetensors")
  vkd(compile qdq_maxpool.json --partition -o m.vkd)
  expect_exit(0)
  vkd(inspect m.partition.json)
  expect_exit(0)
  expect_stdout("^model: m.partition.json \\(partitioned: 3 step\\(s\\), 2 on the GPU, 1 on the host\\)\ndevice: [^\n]+\n"
                "inputs \\(1\\):\n  \\[0\\] x: float32 \\[1,4,6,10\\]  \\(device: [^\n]+\\), 960 host bytes\n"
                "outputs \\(1\\):\n  \\[0\\] y: float32 \\[1,4,3,5\\]  \\(device: [^\n]+\\), 240 host bytes\n"
                "steps \\(3\\):\n"
                "  step 0  GPU   m.p0.vkd +x -> xd\n    memory: [^\n]+\n[^\n]+\n"
                "  step 1  host  aten.max_pool2d +xd -> m  \\(node 3 \\(aten.max_pool2d\\), reference interpreter\\)\n"
                "  step 2  GPU   m.p1.vkd +m -> y\n    memory: [^\n]+\n[^\n]+\n"
                "tensors \\(4\\):\n"
                "  x: float32 \\[1,4,6,10\\]  \\(model input -> step 0\\)\n"
                "  xd: float32 \\[1,4,6,10\\]  \\(step 0 -> step 1\\)\n"
                "  m: float32 \\[1,4,3,5\\]  \\(step 1 -> step 2\\)\n"
                "  y: float32 \\[1,4,3,5\\]  \\(step 2 -> model output\\)\n$")
  # A host constant comes from the weights, which inspect then needs as run does.
  vkd(compile add_constant.json --weights weights.safetensors --partition -o a.vkd)
  expect_exit(0)
  vkd(inspect a.partition.json)
  expect_exit(2)
  expect_stderr("^vkd inspect: a.partition.json: step 1 \\(host node 2 \\(aten.add.Tensor\\)\\) reads constant 'other': pass --weights W.safetensors")
  vkd(inspect a.partition.json --weights weights.safetensors)
  expect_exit(0)
  expect_stdout("\n  step 1  host  aten.add.Tensor +xd, other -> s  \\(node 2 \\(aten.add.Tensor\\), reference interpreter\\)\n")
  expect_stdout("\n  other: float32 \\[1,1,4,1,1\\]  \\(weights 'add.other' -> step 1\\)\n")
  vkd(inspect m.partition.json --dot m.dot)
  expect_exit(2)
  expect_stderr("^vkd inspect: --dot takes a .vkd model \\(draw each partition's blob\\)\nusage: vkd inspect ")
  vkd(inspect m.p0.vkd --weights weights.safetensors)
  expect_exit(2)
  expect_stderr("^vkd inspect: --weights is only used with a partitioned model\nusage: vkd inspect ")

elseif(CASE STREQUAL "run_check")
  copy_to_work("${QDQ_CLONE}")
  vkd(compile qdq_clone.json -o m.vkd)
  expect_exit(0)
  vkd(run m.vkd --input "x=${X}" --output-dir out --check qdq_clone.json)
  expect_exit(0)
  # (q2's reference: the clone, dequantize, alias_copy and quantize that the compiler made one
  # requantizing q8ta_clamp, fed the device's xq)
  expect_stdout("\n  q2 +int8 +\\[1,5,7,9\\] +0 0/315 +node 4 \\(quantized_decomposed.quantize_per_tensor\\)  \\[4 nodes from xq\\]\n")
  expect_stdout("\ncompared 3 tensor\\(s\\); 0 made by the compiler have no counterpart in the graph\n"
                "check: every compared tensor matches the reference\n")
  # A graph whose second quantize has another zero point than the compiled one: not the
  # graph the blob records (its graph IR hash), refused before anything runs.
  derive_file(qdq_clone.json other.json "\"scale\": 0.05, \"zero_point\": 4, \"quant_min\": -100"
              "\"scale\": 0.05, \"zero_point\": 5, \"quant_min\": -100")
  vkd(run m.vkd --input "x=${X}" --output-dir out2 --check other.json)
  expect_exit(2)
  expect_stderr("^vkd run: --check: m.vkd was compiled from a different graph: it records graph "
                "IR hash 0x[0-9a-f]+, other.json hashes to 0x[0-9a-f]+\n$")
  expect_files("${WORK}" m.vkd other.json out qdq_clone.json)
  # The same blob as an older vkdelegate wrote it (no graph IR hash): the check runs, and
  # names the changed node as the first difference (every later tensor differs too), as it
  # would a device that computed it wrong.
  make_v1_blob(m.vkd old.vkd)
  vkd(run old.vkd --input "x=${X}" --output-dir out --force --check other.json)
  expect_exit(1)
  expect_stdout("  xq +int8 +\\[1,5,7,9\\] +0 0/315 ")
  expect_stdout("\nfirst difference: tensor 'q2' \\(node 4 \\(quantized_decomposed.quantize_per_tensor\\)\\): "
                "[0-9]+ of 315 elements differ, max abs error 1; first at flat index [0-9]+: device -?[0-9]+, reference -?[0-9]+\n$")
  vkd(run m.vkd --input "x=${X}" --output-dir out --force --check missing.json)
  expect_exit(2)
  expect_stderr("missing.json")
  vkd(run m.vkd --input "x=${X}" --weights w.safetensors)
  expect_exit(2)
  expect_stderr("--weights is only used with --check")

elseif(CASE STREQUAL "run_check_localises")
  # The graph's FIRST quantize has another zero point than the compiled one. Each tensor's
  # reference is fed the device's own inputs, so only xq differs: q2 and y, made from the
  # device's xq, match (the old end-to-end comparison flagged all of them). The end-to-end
  # drift is still shown, for information.
  # (A blob without a graph IR hash, so the check takes the other graph: run_check.)
  copy_to_work("${QDQ_CLONE}")
  vkd(compile qdq_clone.json -o m.vkd)
  expect_exit(0)
  make_v1_blob(m.vkd old.vkd)
  derive_file(qdq_clone.json early.json
              "\"zero_point\": -3, \"quant_min\": -128, \"quant_max\": 127, \"dtype\": \"int8\"},\n     \"outputs\": [\"xq\"]"
              "\"zero_point\": -2, \"quant_min\": -128, \"quant_max\": 127, \"dtype\": \"int8\"},\n     \"outputs\": [\"xq\"]")
  vkd(run old.vkd --input "x=${X}" --output-dir out --check early.json)
  expect_exit(1)
  expect_stdout("\n  xq +int8 +\\[1,5,7,9\\] +1 [1-9][0-9]*/315( \\+[0-9]+ ties)? +node 0 \\(quantized_decomposed.quantize_per_tensor\\)  <-- differs\n")
  expect_stdout("\n  q2 +int8 +\\[1,5,7,9\\] +0 0/315 +node 4 [^\n]+  \\[4 nodes from xq\\]\n")
  expect_stdout("\n  y \\(output\\) +float32 +\\[1,5,7,9\\] +0 0/315 +node 5 \\(quantized_decomposed.dequantize_per_tensor\\)\n")
  expect_stdout("\nend to end: y max abs err [0-9.]+, [1-9][0-9]*/315 differ from the reference "
                "run on the graph inputs alone\nend to end: for information, not part of the "
                "verdict: that run feeds each op the reference's own values, so a tie the device "
                "rounded the other way spreads to the ops after it\n")
  expect_stdout("\nfirst difference: tensor 'xq' \\(node 0 \\(quantized_decomposed.quantize_per_tensor\\)\\): "
                "[0-9]+ of 315 elements differ, max abs error 1; first at flat index [0-9]+: device -?[0-9]+, reference -?[0-9]+\n$")

elseif(CASE STREQUAL "run_check_wrong_graph")
  # A blob checked against a graph it was not compiled from: refused before anything runs, in
  # one line, exit 2, nothing written. The pixel-shuffle blob against the epilogue graph (same
  # input, outputs 'a' and 'b' four times larger there) used to read past its outputs ("max abs
  # err 2.23e+38", another value every run); against the conv graph it passed with none of its
  # outputs compared.
  compile_conv_graph(pixel_shuffle.json ps.vkd)
  copy_to_work("${GRAPHS}/epilogue.json" "${GRAPHS}/conv.json")
  vkd(run ps.vkd --input x=conv_x.npy --output-dir out --check epilogue.json
      --weights conv.safetensors)
  expect_exit(2)
  expect_stderr("^vkd run: --check: ps.vkd was compiled from a different graph: it records "
                "graph IR hash 0x[0-9a-f]+, epilogue.json with conv.safetensors hashes to "
                "0x[0-9a-f]+\n$")
  # Without a graph IR hash (an older blob), the model's outputs must be values of the graph
  # with the same shapes, or they cannot be compared.
  make_v1_blob(ps.vkd ps_v1.vkd)
  vkd(run ps_v1.vkd --input x=conv_x.npy --output-dir out --check epilogue.json
      --weights conv.safetensors)
  expect_exit(2)
  expect_stderr("^vkd run: --check: model output 'a' is \\[2,1,14,12\\] but \\[2,4,14,12\\] in "
                "epilogue.json: ps_v1.vkd was not compiled from this graph\n$")
  vkd(run ps_v1.vkd --input x=conv_x.npy --output-dir out --check conv.json
      --weights conv.safetensors)
  expect_exit(2)
  expect_stderr("^vkd run: --check: model output 'a' is not a value of conv.json: ps_v1.vkd "
                "was not compiled from this graph\n$")
  expect_files("${OUT}")
  # An old blob still runs, and checks against its own graph.
  vkd(run ps_v1.vkd --input x=conv_x.npy --output-dir out --check pixel_shuffle.json
      --weights conv.safetensors)
  expect_exit(0)
  expect_stdout("check: every compared tensor matches the reference\n")
  # A check that compared none of the model's outputs fails (it said "every compared tensor
  # matches" with nothing compared): a model that passes its input through, which no node of
  # the graph computes.
  file(WRITE "${WORK}/pass.json" "{\"vkd_graph\": 1, \"inputs\": [\"x\"], \"outputs\": [\"x\"], "
       "\"values\": {\"x\": {\"dtype\": \"float32\", \"shape\": [2, 5, 7, 6]}}, \"nodes\": []}")
  vkd(compile pass.json -o pass.vkd)
  expect_exit(0)
  vkd(run pass.vkd --input x=conv_x.npy --output-dir pass_out --check pass.json)
  expect_exit(1)
  expect_stdout("\ncompared 0 tensor\\(s\\); 1 made by the compiler have no counterpart in the "
                "graph\ncheck: FAILED: none of the model's 1 output\\(s\\) was compared \\(no node "
                "of the graph writes a value of its name\\)\n")

elseif(CASE STREQUAL "compile_run_linear")
  # dq -> linear -> relu -> q and dq -> linear (float out) fuse into q8ta_linear and
  # q8ta_linear_dq; the device matches the reference interpreter on every named tensor.
  copy_to_work("${GRAPHS}/linear.json" "${FIXTURE}/linear.safetensors" "${FIXTURE}/lin_x.npy")
  vkd(compile linear.json --weights linear.safetensors -o lin.vkd --report)
  expect_exit(0)
  expect_stdout("fused dq -> aten.linear -> aten.relu -> q \\(nodes 1, 3..5\\) into q8ta_linear 'yq' \\(activation relu\\)")
  expect_stdout("fused dq -> aten.linear \\(nodes 7, 9\\) into q8ta_linear_dq 'z'")
  vkd(run lin.vkd --input x=lin_x.npy --output-dir out --check linear.json --weights linear.safetensors)
  expect_exit(0)
  expect_stdout("\n  yq +int8 +\\[2,3,5\\] +0 0/30 ")
  expect_stdout("\n  z \\(output\\) +float32 +\\[2,3,3\\] +0 0/18 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy z.npy)

elseif(CASE STREQUAL "compile_run_pixel_shuffle")
  # conv -> q, then dq -> pixel_shuffle -> q twice (other output parameters: the requantizing
  # kernel; the same ones: the byte shuffle) fuse into q8ta_pixel_shuffle, and dq ->
  # pixel_shuffle into a graph output runs the float pixel_shuffle; the device matches the
  # reference interpreter on every named tensor.
  compile_conv_graph(pixel_shuffle.json ps.vkd)
  expect_stdout("fused dq -> aten.pixel_shuffle -> q \\(node 5..7\\) into q8ta_pixel_shuffle 'aq'")
  expect_stdout("fused dq -> aten.pixel_shuffle -> q \\(node 9..11\\) into q8ta_pixel_shuffle 'bq'")
  expect_stdout("  pixel_shuffle\\(cd3\\) -> f\n")
  run_checked_conv_graph(pixel_shuffle.json ps.vkd)
  expect_stdout("\n  aq +int8 +\\[2,1,14,12\\] +0 0/336 ")
  expect_stdout("\n  bq +int8 +\\[2,1,14,12\\] +0 0/336 ")
  expect_stdout("\n  f \\(output\\) +float32 +\\[2,1,14,12\\] +0 0/336 ")
  expect_files("${OUT}" a.npy b.npy f.npy)
  vkd(inspect ps.vkd)
  expect_exit(0)
  expect_stdout("q8ta_pixel_shuffle_4w4c_4w4c_requant")
  expect_stdout("q8ta_pixel_shuffle_4w4c_4w4c_shuffle")
  expect_stdout("pixel_shuffle_buffer_buffer_float32")

elseif(CASE STREQUAL "compile_run_epilogue")
  # A byte-moving pixel shuffle after a pointwise convolution (the linear kernels) and after a
  # 3x3 one (the direct kernel) joins the convolution's store: q8ta_conv2d_ps. The same graph
  # compiled with --no-fuse-epilogue keeps q8ta_conv2d -> q8ta_pixel_shuffle. Both blobs match
  # the reference interpreter on every named tensor, and their outputs are the same bytes.
  compile_conv_graph(epilogue.json epi.vkd)
  expect_stdout("q \\(node 6..8\\) into the epilogue of q8ta_conv2d 'pq': q8ta_conv2d_ps writes 'aq'")
  expect_stdout("q \\(node 14..16\\) into the epilogue of q8ta_conv2d 'cq': q8ta_conv2d_ps writes 'bq'")
  expect_stdout("\n  q8ta_conv2d_ps\\(xq, wp, wp_scales, pq_bias\\) -> aq\n")
  expect_stdout("\n  q8ta_conv2d_ps\\(xq, w3, w3_scales, b3\\) -> bq\n")
  run_checked_conv_graph(epilogue.json epi.vkd)
  expect_stdout("\n  aq +int8 +\\[2,4,14,12\\] +0 0/1344 ")
  expect_stdout("\n  bq +int8 +\\[2,4,14,12\\] +0 0/1344 ")
  file(RENAME "${OUT}" "${WORK}/fused")
  vkd(inspect epi.vkd)
  expect_exit(0)
  expect_stdout("kernel q8ta_linear_")         # the pointwise route
  expect_stdout("kernel q8ta_conv2d_4w4c_int8_4w4c_")  # the direct route
  vkd(compile epilogue.json --weights conv.safetensors -o unfused.vkd --report --no-fuse-epilogue)
  expect_exit(0)
  expect_stdout("\\(node 6..8\\) into the epilogue of q8ta_conv2d 'pq': epilogue fusion is off")
  expect_stdout("fused dq -> aten.pixel_shuffle -> q \\(node 14..16\\) into q8ta_pixel_shuffle 'bq'")
  run_checked_conv_graph(epilogue.json unfused.vkd)
  expect_same_npy("${WORK}/fused/a.npy" "${OUT}/a.npy")
  expect_same_npy("${WORK}/fused/b.npy" "${OUT}/b.npy")

elseif(CASE STREQUAL "compile_run_pixel_shuffle_f16")
  # A float16 graph: clone (folded) -> pixel_shuffle r = 2, and pixel_shuffle r = 4, compiled to
  # float16 tensors, run on a '<f2' input and written as '<f2' files that equal the fixture's own
  # permutation bit for bit (signed zeros, subnormals, infinities); --check agrees.
  copy_to_work("${GRAPHS}/pixel_shuffle_f16.json" "${FIXTURE}/ps16_x.npy")
  vkd(compile pixel_shuffle_f16.json -o ps16.vkd --report)
  expect_exit(0)
  expect_stdout("lowered 3 node\\(s\\): 1 identity, 2 pixel_shuffle\n")
  expect_stdout("\n  y: float16 [a-z0-9]+ [a-z_]+\n  z: float16 ")
  vkd(run ps16.vkd --input x=ps16_x.npy --output-dir out --check pixel_shuffle_f16.json)
  expect_exit(0)
  expect_stdout("input  x: float16 \\[2,16,3,5\\]  \\(device: float16 ")
  expect_stdout("\n  y \\(output\\) +float16 +\\[2,4,6,10\\] +0 0/480 ")
  expect_stdout("\n  z \\(output\\) +float16 +\\[2,1,12,20\\] +0 0/480 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy z.npy)
  expect_same_npy("${OUT}/y.npy" "${FIXTURE}/ps16_y.npy")
  expect_same_npy("${OUT}/z.npy" "${FIXTURE}/ps16_z.npy")
  # A float16 file for a float32 model input is refused, naming both dtypes.
  vkd(run "${MODEL}" --input "x=ps16_x.npy" --output-dir out --force)
  expect_exit(2)
  expect_stderr("wrong dtype: the model expects float32, the file has float16")

elseif(CASE STREQUAL "compile_run_conv")
  # dq -> conv -> relu -> q (3x3, direct), dq -> depthwise conv (float out) and dq -> 1x1 conv -> q
  # (pointwise: the linear kernels over 4W4C pixels) fuse into q8ta_conv2d / q8ta_conv2d_dq, the
  # dequantizes of the graph outputs y and p into the convolutions' stores (q8ta_conv2d_q_dq); the
  # device matches the reference interpreter on every named tensor, bit for bit.
  compile_conv_graph(conv.json conv.vkd)
  expect_stdout("into q8ta_conv2d 'yq' \\(activation relu\\)")
  expect_stdout("into q8ta_conv2d_dq 'z'")
  expect_stdout("into q8ta_conv2d 'pq'")
  # The dequantizes of yq and pq (graph outputs) run in those convolutions' stores.
  expect_stdout("into the epilogue of q8ta_conv2d 'yq': q8ta_conv2d_q_dq writes 'y' dequantized")
  expect_stdout("into the epilogue of q8ta_conv2d 'pq': q8ta_conv2d_q_dq writes 'p' dequantized")
  # The quantize of x feeds three convolutions: it stays its own op (no q8ta_conv2d_fq).
  string(CONCAT unfused_q "not fused: q \\(node 0\\) into the load of q8ta_conv2d_q_dq 'y': "
         "'xq' has 3 consumers \\(nodes 1, 7, 10\\)\n")
  expect_stdout("${unfused_q}")
  expect_stdout("lowered [0-9]+ node\\(s\\): [^\n]*1 q8ta_quantize")
  run_checked_conv_graph(conv.json conv.vkd)
  expect_stdout("\n  y \\(output\\) +float32 +\\[2,6,7,6\\] +0 0/504 ")
  expect_stdout("\n  z \\(output\\) +float32 +\\[2,5,4,3\\] +0 0/120 ")
  expect_stdout("\n  p \\(output\\) +float32 +\\[2,4,7,6\\] +0 0/336 ")
  expect_files("${OUT}" y.npy z.npy p.npy)
  vkd(inspect conv.vkd)
  expect_exit(0)
  expect_stdout("q8ta_conv2d_dw_")
  expect_stdout("q8ta_conv2d_4w4c_float_q_")
  # Unfused, pq is the pointwise route (the linear kernels) and its own q8ta_dequantize: the
  # same checks pass on every named tensor.
  vkd(compile conv.json --weights conv.safetensors -o unfused.vkd --report --no-fuse-epilogue)
  expect_exit(0)
  expect_stdout("q8ta_dequantize\\(pq\\) -> p\n")
  vkd(run unfused.vkd --input x=conv_x.npy --output-dir unfused_out --check conv.json
      --weights conv.safetensors)
  expect_exit(0)
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_stdout("\n  pq +int8 +\\[2,4,7,6\\] +0 0/336 ")
  vkd(inspect unfused.vkd)
  expect_exit(0)
  expect_stdout("q8ta_linear_")

elseif(CASE STREQUAL "compile_run_residual_pool")
  # quantize -> depthwise conv -> q, then dq(conv) + dq(x) -> relu -> q (a residual block),
  # dq -> max_pool2d (3x3, stride 2, padding 1, ceil_mode: a window more along W) -> q, and
  # dq -> mean over H, W -> q -> dequantize, then dq(mean) [2,5,1,1] + dq(max_pool) -> q (a
  # broadcast operand, given first): each fuses into its q8ta op, and the device matches the
  # reference interpreter on every named tensor (power-of-two scales: exact in float32).
  compile_conv_graph(residual_pool.json rp.vkd)
  expect_stdout("into q8ta_conv2d 'zq' \\(activation none\\)")
  expect_stdout("into q8ta_add 'sq' \\(activation relu\\)")
  expect_stdout("into q8ta_max_pool2d 'mq'")
  expect_stdout("into q8ta_mean 'aq'")
  expect_stdout("into q8ta_add 'bq' \\(activation none\\)")
  run_checked_conv_graph(residual_pool.json rp.vkd)
  expect_stdout("\n  sq +int8 +\\[2,5,7,6\\] +0 0/420 ")
  expect_stdout("\n  mq +int8 +\\[2,5,4,4\\] +0 0/160 ")
  expect_stdout("\n  aq +int8 +\\[2,5,1,1\\] +0 0/10 ")
  expect_stdout("\n  bq +int8 +\\[2,5,4,4\\] +0 0/160 ")
  expect_files("${OUT}" y.npy z.npy)

elseif(CASE STREQUAL "compile_run_classifier_head")
  # conv -> q, then three heads: adaptive_avg_pool2d -> q -> dq -> flatten (view_copy [2, -1])
  # -> q -> dq -> linear -> q (the flatten folds into the mean: q8ta_mean_flat writes the [2, 8]
  # rows in the linear's 4H4W), mean.dim keepdim=False -> q -> dq -> linear (float out), and
  # dq -> view_copy [2, 8, 36] -> q (one q8ta_view kernel). Every node runs on the GPU, with no
  # layout conversion, and the device matches the reference interpreter on every named tensor.
  copy_to_work("${GRAPHS}/classifier_head.json" "${FIXTURE}/head.safetensors"
               "${FIXTURE}/head_x.npy")
  vkd(compile classifier_head.json --weights head.safetensors -o head.vkd --report)
  expect_exit(0)
  expect_stdout("fused dq -> aten.view_copy -> q \\(node 8..10\\) into q8ta_mean 'aq': "
                "q8ta_mean_flat writes the \\[2, 8\\] rows 'fq' itself\n")
  expect_stdout("fused dq -> aten.mean.dim -> q \\(node 16..18\\) into q8ta_mean_flat 'mq'\n")
  expect_stdout("fused dq -> aten.view_copy -> q \\(node 21..23\\) into q8ta_view 'rq'")
  expect_stdout("\\[layouts\\] no changes\n")
  expect_stdout("\\[final\\] 8 nodes, [0-9]+ blob bytes\n"
                "  q8ta_conv2d_fq\\(x, w1, w1_scales, b1\\) -> cq\n"
                "  q8ta_mean_flat\\(cq\\) -> fq\n"
                "  q8ta_linear\\(fq, w2, w2_scales, b2\\) -> lq\n"
                "  q8ta_dequantize\\(lq\\) -> y\n"
                "  q8ta_mean_flat\\(cq\\) -> mq\n"
                "  q8ta_linear_dq\\(mq, w2, w2_scales, b2\\) -> z\n"
                "  q8ta_view\\(cq\\) -> rq\n"
                "  q8ta_dequantize\\(rq\\) -> v\n")
  expect_stdout("\n  fq: int8x4 buffer 4H4W\n")
  if(STDOUT MATCHES "as edge ops|not fused")
    message(FATAL_ERROR "a node was left for the host or not fused")
  endif()
  vkd(run head.vkd --input x=head_x.npy --output-dir out --check classifier_head.json
      --weights head.safetensors)
  expect_exit(0)
  expect_stdout("\n  fq +int8 +\\[2,8\\] +0 0/16 ")
  expect_stdout("\n  lq +int8 +\\[2,3\\] +0 0/6 ")
  expect_stdout("\n  mq +int8 +\\[2,8\\] +0 0/16 ")
  expect_stdout("\n  rq +int8 +\\[2,8,36\\] +0 0/576 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy z.npy v.npy)

elseif(CASE STREQUAL "compile_run_standalone_act")
  # conv -> q -> dq -> hardtanh(0, 6) -> q and add -> q -> dq -> relu -> q, each q with the
  # parameters of the one before (activations PyTorch left standalone): the activation joins the
  # conv's and the add's epilogue (their activation range narrowed), the dq / act / q nodes go;
  # dq -> clamp -> q requantizing the add's output (also read elsewhere) becomes one q8ta_clamp.
  # Every node runs on the GPU, and the device matches the reference interpreter.
  copy_to_work("${GRAPHS}/standalone_act.json" "${FIXTURE}/head.safetensors"
               "${FIXTURE}/head_x.npy")
  vkd(compile standalone_act.json --weights head.safetensors -o act.vkd --report)
  expect_exit(0)
  expect_stdout("fused dq -> aten.hardtanh -> q \\(node 5..7\\) into the epilogue of "
                "q8ta_conv2d: it writes 'hq', activation range -128..127 -> -10..14\n")
  expect_stdout("fused dq -> aten.relu -> q \\(node 12..14\\) into the epilogue of "
                "q8ta_add: it writes 'rq', activation range -128..127 -> 0..127\n")
  expect_stdout("not fused: dq -> aten.clamp -> q \\(node 16..18\\) as the epilogue of "
                "q8ta_add: 'rq' has 2 consumers \\(node 15..16\\)\n"
                "  fused dq -> aten.clamp -> q \\(node 16..18\\) into q8ta_clamp 'kq' "
                "\\(activation range 8..127\\)\n")
  expect_stdout("\\[final\\] 5 nodes, [0-9]+ blob bytes\n"
                "  q8ta_conv2d_fq\\(x, w1, w1_scales, b1\\) -> hq\n"
                "  q8ta_add\\(hq, hq\\) -> rq\n"
                "  q8ta_dequantize\\(rq\\) -> y\n"
                "  q8ta_clamp\\(rq\\) -> kq\n"
                "  q8ta_dequantize\\(kq\\) -> z\n")
  expect_no_host_step()
  vkd(run act.vkd --input x=head_x.npy --output-dir out --check standalone_act.json
      --weights head.safetensors)
  expect_exit(0)
  expect_stdout("\n  hq +int8 +\\[2,8,6,6\\] +0 0/576 ")
  expect_stdout("\n  rq +int8 +\\[2,8,6,6\\] +0 0/576 ")
  expect_stdout("\n  kq +int8 +\\[2,8,6,6\\] +0 0/576 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy z.npy)

elseif(CASE STREQUAL "compile_run_channel_shuffle")
  # ShuffleNet's channel shuffle as FX writes it (5-D view, transpose, clone, view, a q -> dq pair
  # after each) between a conv and a permute to channels-last that a linear reads with no
  # quantize in between: the shuffle is one q8ta_channel_shuffle, the dq moves below the permute
  # ([sink_dequantize]), which then runs on the int8 data (4W4C in, the linear's 4H4W out) and
  # the linear is an int8 one. Nothing is left for the host; the device matches the reference.
  copy_to_work("${GRAPHS}/channel_shuffle.json" "${FIXTURE}/head.safetensors"
               "${FIXTURE}/head_x.npy")
  vkd(compile channel_shuffle.json --weights head.safetensors -o cs.vkd --report)
  expect_exit(0)
  expect_stdout("\\[sink_dequantize\\]\n  moved dq \\(node 17\\) below aten.permute_copy "
                "\\(node 18\\): they move the int8 values of 'sq', 'p' is dequantized after them\n")
  expect_stdout("fused dq -> aten.view_copy -> q -> dq -> aten.transpose_copy.int -> q -> dq -> "
                "aten.clone -> q -> dq -> aten.view_copy -> q \\(node 5..16\\) into "
                "q8ta_channel_shuffle 'sq' \\(channel shuffle \\(groups 2\\)\\)\n")
  expect_stdout("fused aten.permute_copy \\(node 17\\) into q8ta_permute 'p_int8' \\(permute "
                "\\[0, 2, 3, 1\\]\\)\n")
  expect_stdout("\\[final\\] 5 nodes, [0-9]+ blob bytes\n"
                "  q8ta_conv2d_fq\\(x, w1, w1_scales, b1\\) -> cq\n"
                "  q8ta_channel_shuffle\\(cq\\) -> sq\n"
                "  q8ta_permute\\(sq\\) -> p_int8\n"
                "  q8ta_linear\\(p_int8, wl, wl_scales, bl\\) -> lq\n"
                "  q8ta_dequantize\\(lq\\) -> y\n")
  expect_stdout("  sq: int8x4 buffer 4W4C\n")
  expect_stdout("  p_int8: int8x4 buffer 4H4W\n")
  expect_no_host_step()
  vkd(run cs.vkd --input x=head_x.npy --output-dir out --check channel_shuffle.json
      --weights head.safetensors)
  expect_exit(0)
  expect_stdout("\n  sq +int8 +\\[2,8,6,6\\] +0 0/576 ")
  expect_stdout("\n  lq +int8 +\\[2,6,6,3\\] +0 0/216 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy)

elseif(CASE STREQUAL "compile_run_mul_pool")
  # A squeeze-excite mul (the [2, 8, 1, 1] mean times the conv output), a mul by a number with a
  # relu after it, avg_pool2d (ceil_mode, count_include_pad = False) and adaptive_avg_pool2d to
  # 3x2: each becomes its int8 kernel (q8ta_mul, q8ta_mul_scalar, q8ta_avg_pool2d,
  # q8ta_adaptive_avg_pool2d), nothing is left for the host, and the device matches the
  # reference interpreter.
  copy_to_work("${GRAPHS}/mul_pool.json" "${FIXTURE}/head.safetensors" "${FIXTURE}/head_x.npy")
  vkd(compile mul_pool.json --weights head.safetensors -o mp.vkd --report)
  expect_exit(0)
  expect_stdout("fused dq, dq -> aten.mul.Tensor -> q \\(node 8..11\\) into q8ta_mul 'sq' "
                "\\(activation none\\)\n")
  expect_stdout("fused dq -> aten.mul.Scalar -> aten.relu -> q \\(node 12..15\\) into "
                "q8ta_mul_scalar 'rq' \\(scalar -0.75, activation range -128..64\\)\n")
  expect_stdout("\\[final\\] 7 nodes, [0-9]+ blob bytes\n"
                "  q8ta_conv2d_fq\\(x, w1, w1_scales, b1\\) -> cq\n"
                "  q8ta_mean\\(cq\\) -> mq\n"
                "  q8ta_mul\\(mq, cq\\) -> sq\n"
                "  q8ta_mul_scalar\\(sq\\) -> rq\n"
                "  q8ta_avg_pool2d\\(rq\\) -> apq\n"
                "  q8ta_adaptive_avg_pool2d\\(apq\\) -> adq\n"
                "  q8ta_dequantize\\(adq\\) -> y\n")
  expect_no_host_step()
  vkd(run mp.vkd --input x=head_x.npy --output-dir out --check mul_pool.json
      --weights head.safetensors)
  expect_exit(0)
  expect_stdout("\n  apq +int8 +\\[2,8,4,4\\] +0 0/256 ")
  expect_stdout("\n  adq +int8 +\\[2,8,3,2\\] +0 0/96 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy)

elseif(CASE STREQUAL "compile_run_max_pool_requant")
  # dq -> max_pool2d -> q whose q has other qparams than the dq (a U-Net's encoder pool, whose
  # pooled map FX observes apart): q8ta_max_pool2d requantizes the max; a second max pool with
  # the same qparams on both sides takes the byte variant. Nothing is left for the host, and
  # the device matches the reference interpreter bit for bit.
  copy_to_work("${GRAPHS}/max_pool_requant.json" "${FIXTURE}/head.safetensors"
               "${FIXTURE}/head_x.npy")
  vkd(compile max_pool_requant.json --weights head.safetensors -o mpr.vkd --report)
  expect_exit(0)
  expect_stdout("fused dq -> aten.max_pool2d -> q \\(node 5..7\\) into q8ta_max_pool2d 'm1q' "
                "\\(the max requantized: scale 1 zero_point -10 -> scale 0.75 zero_point 5\\)\n")
  expect_stdout("fused dq -> aten.max_pool2d -> q \\(node 8..10\\) into q8ta_max_pool2d 'm2q'\n")
  expect_stdout("\\[final\\] 4 nodes, [0-9]+ blob bytes\n"
                "  q8ta_conv2d_fq\\(x, w1, w1_scales, b1\\) -> cq\n"
                "  q8ta_max_pool2d\\(cq\\) -> m1q\n"
                "  q8ta_max_pool2d\\(m1q\\) -> m2q\n"
                "  q8ta_dequantize\\(m2q\\) -> y\n")
  expect_no_host_step()
  vkd(run mpr.vkd --input x=head_x.npy --output-dir out --check max_pool_requant.json
      --weights head.safetensors)
  expect_exit(0)
  expect_stdout("\n  m1q +int8 +\\[2,8,4,4\\] +0 0/256 ")
  expect_stdout("\n  m2q +int8 +\\[2,8,3,3\\] +0 0/144 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy)

elseif(CASE STREQUAL "compile_run_affine")
  # torchao affine quantization lowered to the GPU ops: choose_qparams_affine (asymmetric per
  # token, symmetric int4 per group along two dims) -> quantize_affine -> dequantize_affine, and
  # constant per-group scales / int64 zero points and per-channel scales without a zero point
  # from the weights; the device matches the reference interpreter bit for bit on every tensor.
  copy_to_work("${GRAPHS}/affine_dynamic.json" "${GRAPHS}/affine_constant.json"
               "${FIXTURE}/affine.safetensors" "${FIXTURE}/affine_x.npy")
  vkd(compile affine_dynamic.json -o dyn.vkd --report)
  expect_exit(0)
  expect_stdout("lowered 6 node\\(s\\): 2 choose_qparams_affine, 2 q8ta_dequantize_affine, 2 q8ta_quantize_affine\n")
  expect_stdout("\n  xq: int8x4 buffer 4H4W\n")
  vkd(run dyn.vkd --input x=affine_x.npy --output-dir out --check affine_dynamic.json)
  expect_exit(0)
  expect_stdout("\n  s +float32 +\\[2,8,1\\] +0 0/16 ")
  expect_stdout("\n  zp +int32 +\\[2,8,1\\] +0 0/16 ")
  expect_stdout("\n  xq +int8 +\\[2,8,16\\] +0 0/256 ")
  expect_stdout("\n  tz +int32 +\\[2,1,4\\] +0 0/8 ")
  expect_stdout("\n  uq +int8 +\\[2,8,16\\] +0 0/256 ")
  expect_stdout("\n  u \\(output\\) +float32 +\\[2,8,16\\] +0 0/256 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  vkd(compile affine_constant.json --weights affine.safetensors -o const.vkd --report)
  expect_exit(0)
  expect_stdout("  q8ta_dequantize_affine\\(vq, cs, cs_zero_point\\) -> v\n")
  vkd(run const.vkd --input x=affine_x.npy --output-dir out --force --check affine_constant.json
      --weights affine.safetensors)
  expect_exit(0)
  expect_stdout("\n  xq +int8 +\\[2,8,16\\] +0 0/256 ")
  expect_stdout("\n  vq +int8 +\\[2,8,16\\] +0 0/256 ")
  expect_stdout("\n  v \\(output\\) +float32 +\\[2,8,16\\] +0 0/256 ")
  expect_stdout("check: every compared tensor matches the reference\n")
  expect_files("${OUT}" y.npy u.npy v.npy)
  # What the backend ops cannot express: exit 2, the node named, no blob.
  derive_file(affine_dynamic.json no_zero.json "\"eps\": 0.0001}" "\"eps\": 0.0001, \"preserve_zero\": false}")
  vkd(compile no_zero.json -o no_zero.vkd)
  expect_exit(2)
  expect_stderr("node 3 \\(torchao.choose_qparams_affine\\): cannot lower to choose_qparams_affine: preserve_zero = false is not supported")
  if(EXISTS "${WORK}/no_zero.vkd")
    message(FATAL_ERROR "no_zero.vkd was written")
  endif()

elseif(CASE STREQUAL "compile_report")
  copy_to_work("${QDQ_CLONE}")
  vkd(compile qdq_clone.json -o m.vkd --report)
  expect_exit(0)
  file(SIZE "${WORK}/m.vkd" blob_bytes)
  # Every pass's header and lines, the final graph and every tensor's placement, in order.
  set(report "${STDOUT}")
  set(want
"[fuse_and_lower]
  fused dq -> aten.alias_copy (node 2..3) into identity 'xa_int8' (a view of the int8 data)
  fused q (node 4) into q8ta_clamp 'q2' (requantizes the view 'xa_int8': scale 0.0375 zero_point -3 range -128..127 -> scale 0.05 zero_point 4 range -100..100)
  lowered 3 node(s): 1 identity, 1 q8ta_dequantize, 1 q8ta_quantize
[layouts]
  tied 4 tensors (xq, ...) -> buffer 4W4C
[fold]
  folded node 1 (aten.clone) (input and output share 4W4C)
  folded node 3 (aten.alias_copy) fused into identity (input and output share 4W4C)
[final] 3 nodes, ${blob_bytes} blob bytes
  q8ta_quantize(x) -> xq
  q8ta_clamp(xq) -> q2
  q8ta_dequantize(q2) -> y
[placements]
  x: float32 buffer width_packed
  xq: int8x4 buffer 4W4C
  q2: int8x4 buffer 4W4C
  y: float32 buffer width_packed
wrote m.vkd (${blob_bytes} bytes, 3 nodes)
")
  if(NOT report STREQUAL want)
    message(FATAL_ERROR "the report differs; expected:\n${want}")
  endif()

elseif(CASE STREQUAL "compile_malformed_json")
  copy_to_work("${GRAPHS}/malformed.json")
  vkd(compile malformed.json -o m.vkd)
  expect_exit(2)
  # nlohmann's 1-based byte position of the stray ']' after "y", (line 3, column 19).
  expect_stderr("^vkd compile: malformed.json: malformed JSON at byte 56: [^\n]*line 3, column 19: ")
  expect_files("${WORK}" malformed.json out)

elseif(CASE STREQUAL "compile_unknown_op")
  # An op without a descriptor parses (kept as written), but its outputs must be declared.
  copy_to_work("${GRAPHS}/unknown_op.json")
  vkd(compile unknown_op.json -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: unknown_op.json: node 1 \\(aten.frobnicate\\): op: unknown op 'aten.frobnicate' for shape inference: output 'y' is not declared; declare its dtype and shape in 'values'\n$")
  expect_files("${WORK}" unknown_op.json out)
  # Declared: the backend cannot run it, and the compile says which node.
  derive_file(unknown_op.json declared.json "\"x\": {" "\"y\": {\"dtype\": \"int8\", \"shape\": [1, 4, 4, 4]}, \"x\": {")
  vkd(compile declared.json -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: declared.json: 1 node\\(s\\) cannot be compiled:\nvkd compile:   node 1 \\(aten.frobnicate\\): not supported by the backend \\(no fusion pattern or backend op for 'aten.frobnicate'\\)\n$")
  expect_files("${WORK}" unknown_op.json declared.json out)
  # --partition cannot leave it to the host either (no CPU reference): compile_partition_refused.

elseif(CASE STREQUAL "compile_shape_mismatch")
  copy_to_work("${GRAPHS}/shape_mismatch.json")
  vkd(compile shape_mismatch.json -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: shape_mismatch.json: node 0 \\(quantized_decomposed.quantize_per_tensor\\): output 'xq': declared int8 \\[1, 4, 4, 5\\], inferred int8 \\[1, 4, 4, 4\\]\n$")
  expect_files("${WORK}" shape_mismatch.json out)

elseif(CASE STREQUAL "compile_missing_weight")
  copy_to_work("${GRAPHS}/add_constant.json" "${FIXTURE}/weights.safetensors")
  derive_file(add_constant.json absent.json "\"data\": \"add.other\"" "\"data\": \"add.bias\"")
  vkd(compile absent.json --weights weights.safetensors -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: absent.json: value 'other': field 'data': tensor 'add.bias' is not in the weights file 'weights.safetensors'\n$")
  vkd(compile add_constant.json -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: add_constant.json: value 'other': field 'data': names tensor 'add.other' but no weights file was given \\(--weights\\)\n$")
  vkd(compile add_constant.json --weights nope.safetensors -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: cannot read weights file 'nope.safetensors': no such file\n$")
  # Control: with the right file the weights are accepted (the graph then stops at the
  # backend check, which is not what this case is about).
  vkd(compile add_constant.json --weights weights.safetensors -o m.vkd)
  if(STDERR MATCHES "weights|field 'data'")
    message(FATAL_ERROR "weights.safetensors was not accepted")
  endif()
  expect_files("${WORK}" absent.json add_constant.json weights.safetensors out)

elseif(CASE STREQUAL "compile_weight_dtype_mismatch")
  copy_to_work("${GRAPHS}/add_constant.json" "${FIXTURE}/weights.safetensors")
  derive_file(add_constant.json int8.json "\"dtype\": \"float32\", \"shape\": [1, 1, 4, 1, 1]"
              "\"dtype\": \"int8\", \"shape\": [1, 1, 4, 1, 1]")
  vkd(compile int8.json --weights weights.safetensors -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: int8.json: value 'other': field 'data': tensor 'add.other' has dtype F32, expected I8 \\(value dtype int8\\)\n$")
  expect_files("${WORK}" int8.json add_constant.json weights.safetensors out)

elseif(CASE STREQUAL "compile_unsupported")
  copy_to_work("${GRAPHS}/unsupported.json")
  vkd(compile unsupported.json -o m.vkd --report)
  expect_exit(2)
  # (the pixel shuffle before it fuses into q8ta_pixel_shuffle, which has a kernel; the max pool's
  # q has the range -127..127, which q8ta_max_pool2d does not write)
  set(max_pool "node 5 \\(aten.max_pool2d\\): not yet supported by the backend \\(no fusion pattern or backend op for 'aten.max_pool2d'\\)")
  expect_stderr("^vkd compile: unsupported.json: 1 node\\(s\\) cannot be compiled:\nvkd compile:   ${max_pool}\n$")
  # The report still shows how far the passes got, and ends with the same list.
  expect_stdout("\n\\[final\\] 6 nodes, no blob\n")
  expect_stdout("\n\\[unsupported\\] ${max_pool}\n$")
  expect_files("${WORK}" unsupported.json out)  # no blob, no temporary file

elseif(CASE STREQUAL "compile_existing_output")
  copy_to_work("${QDQ_CLONE}")
  file(WRITE "${WORK}/m.vkd" "${SENTINEL}")
  file(SHA256 "${WORK}/m.vkd" before)
  vkd(compile qdq_clone.json -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: output: 'm.vkd' already exists \\(pass --force to overwrite\\)\n$")
  file(SHA256 "${WORK}/m.vkd" after)
  if(NOT before STREQUAL after)
    message(FATAL_ERROR "m.vkd changed")
  endif()
  expect_files("${WORK}" m.vkd out qdq_clone.json)

# --- Input files that are not regular files: refused at once, the file named, exit 2. Each call
# runs under a short timeout: before the fix /dev/zero was read without end.
elseif(CASE STREQUAL "inspect_not_regular")
  set(VKD_TIMEOUT 60)
  make_fifo(fifo.vkd)
  vkd(inspect /dev/zero)
  expect_exit(2)
  expect_stderr("^vkd inspect: cannot read model file '/dev/zero': it is a character device, not a regular file\n$")
  vkd(inspect fifo.vkd --dot g.dot)
  expect_exit(2)
  expect_stderr("^vkd inspect: cannot read model file 'fifo.vkd': it is a FIFO \\(named pipe\\), not a regular file\n$")
  vkd(run /dev/zero --input "x=${X}" --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: cannot read model file '/dev/zero': it is a character device, not a regular file\n$")
  expect_files("${WORK}" fifo.vkd out)
  expect_files("${OUT}")

elseif(CASE STREQUAL "run_input_not_regular")
  set(VKD_TIMEOUT 60)
  make_fifo(fifo.npy)
  file(CREATE_LINK /dev/zero "${WORK}/zero.npy" SYMBOLIC)
  vkd(run "${MODEL}" --input x=/dev/zero --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: input 'x': /dev/zero: cannot read: it is a character device, not a regular file\n$")
  vkd(run "${MODEL}" --input x=fifo.npy --output-dir out)
  expect_exit(2)
  expect_stderr("^vkd run: input 'x': fifo.npy: cannot read: it is a FIFO \\(named pipe\\), not a regular file\n$")
  vkd(run "${MODEL}" --input x=zero.npy --output-dir out)  # a symlink is followed
  expect_exit(2)
  expect_stderr("^vkd run: input 'x': zero.npy: cannot read: it is a character device, not a regular file\n$")
  expect_files("${OUT}")

elseif(CASE STREQUAL "run_check_not_regular")
  set(VKD_TIMEOUT 60)
  make_fifo(fifo.json)
  copy_to_work("${QDQ_CLONE}")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --check /dev/zero)
  expect_exit(2)
  expect_stderr("^vkd run: --check: cannot read graph file '/dev/zero': it is a character device, not a regular file\n$")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --check fifo.json)
  expect_exit(2)
  expect_stderr("^vkd run: --check: cannot read graph file 'fifo.json': it is a FIFO \\(named pipe\\), not a regular file\n$")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --check qdq_clone.json --weights /dev/zero)
  expect_exit(2)
  expect_stderr("^vkd run: --check: cannot read weights file '/dev/zero': it is a character device, not a regular file\n$")
  expect_files("${OUT}")  # checked before the run: nothing written

elseif(CASE STREQUAL "compile_not_regular")
  set(VKD_TIMEOUT 60)
  make_fifo(fifo.safetensors)
  copy_to_work("${GRAPHS}/add_constant.json")
  vkd(compile add_constant.json --weights /dev/zero -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: cannot read weights file '/dev/zero': it is a character device, not a regular file\n$")
  vkd(compile add_constant.json --weights fifo.safetensors -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: cannot read weights file 'fifo.safetensors': it is a FIFO \\(named pipe\\), not a regular file\n$")
  vkd(compile /dev/zero -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: cannot read graph file '/dev/zero': it is a character device, not a regular file\n$")
  expect_files("${WORK}" add_constant.json fifo.safetensors out)

# --- --force replaces an earlier output, never a file the same command reads (compared by
# identity: another spelling or a symlink is caught). Exit 2, the file's bytes unchanged.
elseif(CASE STREQUAL "compile_force_graph")
  copy_to_work("${QDQ_CLONE}")
  file(SHA256 "${WORK}/qdq_clone.json" sha)
  vkd(compile qdq_clone.json -o qdq_clone.json --force)
  expect_exit(2)
  expect_stderr("^vkd compile: -o qdq_clone.json is the graph; refusing to overwrite a file this command reads\n$")
  vkd(compile qdq_clone.json -o ./out/../qdq_clone.json --force)
  expect_exit(2)
  expect_stderr("^vkd compile: -o ./out/../qdq_clone.json is the graph \\('qdq_clone.json'\\); refusing to overwrite")
  file(CREATE_LINK qdq_clone.json "${WORK}/link.vkd" SYMBOLIC)
  vkd(compile qdq_clone.json --output link.vkd --force)
  expect_exit(2)
  expect_stderr("^vkd compile: --output link.vkd is the graph \\('qdq_clone.json'\\); refusing to overwrite a file this command reads\n$")
  expect_unchanged(qdq_clone.json "${sha}")
  file(REMOVE "${WORK}/link.vkd")
  # --partition: a derived name (m.partition.json) that is the graph.
  file(RENAME "${WORK}/qdq_clone.json" "${WORK}/m.partition.json")
  vkd(compile m.partition.json --partition -o m.vkd --force)
  expect_exit(2)
  expect_stderr("^vkd compile: output m.partition.json is the graph; refusing to overwrite a file this command reads\n$")
  expect_unchanged(m.partition.json "${sha}")
  expect_files("${WORK}" m.partition.json out)

elseif(CASE STREQUAL "compile_force_weights")
  copy_to_work("${GRAPHS}/add_constant.json" "${FIXTURE}/weights.safetensors")
  file(SHA256 "${WORK}/weights.safetensors" sha)
  vkd(compile add_constant.json --weights weights.safetensors -o weights.safetensors --force)
  expect_exit(2)
  expect_stderr("^vkd compile: -o weights.safetensors is the weights file; refusing to overwrite a file this command reads\n$")
  file(CREATE_LINK weights.safetensors "${WORK}/w.vkd" SYMBOLIC)
  vkd(compile add_constant.json --weights weights.safetensors -o w.vkd --force)
  expect_exit(2)
  expect_stderr("^vkd compile: -o w.vkd is the weights file \\('weights.safetensors'\\); refusing to overwrite")
  expect_unchanged(weights.safetensors "${sha}")
  expect_files("${WORK}" add_constant.json weights.safetensors w.vkd out)

elseif(CASE STREQUAL "run_force_trace_input")
  copy_to_work("${X}" "${MODEL}")
  file(SHA256 "${WORK}/x.npy" sha_x)
  file(SHA256 "${WORK}/model.vkd" sha_model)
  vkd(run model.vkd --input x=x.npy --output-dir out --trace x.npy --force)
  expect_exit(2)
  expect_stderr("^vkd run: --trace x.npy is the input 'x'; refusing to overwrite a file this command reads\n$")
  expect_stdout("^$")  # refused before the run
  file(CREATE_LINK x.npy "${WORK}/t.json" SYMBOLIC)
  vkd(run model.vkd --input x=x.npy --output-dir out --trace t.json --force)
  expect_exit(2)
  expect_stderr("^vkd run: --trace t.json is the input 'x' \\('x.npy'\\); refusing to overwrite")
  vkd(run model.vkd --input x=x.npy --output-dir out --trace model.vkd --force)
  expect_exit(2)
  expect_stderr("^vkd run: --trace model.vkd is the model; refusing to overwrite")
  # Two outputs of one run that are the same file.
  vkd(run model.vkd --input x=x.npy --output-dir out --trace out/y.npy --force)
  expect_exit(2)
  expect_stderr("^vkd run: --trace out/y.npy and output 'y' \\(out/y.npy\\) are the same file; each output needs its own\n$")
  expect_unchanged(x.npy "${sha_x}")
  expect_unchanged(model.vkd "${sha_model}")
  expect_files("${OUT}")

elseif(CASE STREQUAL "run_force_output_input")
  # --output-dir where an output's NAME.npy is an input file (directly and through a symlink).
  file(COPY "${X}" DESTINATION "${OUT}")
  file(RENAME "${OUT}/x.npy" "${OUT}/y.npy")
  file(SHA256 "${OUT}/y.npy" sha)
  vkd(run "${MODEL}" --input x=out/y.npy --output-dir out --force)
  expect_exit(2)
  expect_stderr("^vkd run: output 'y' \\(out/y.npy\\) is the input 'x'; refusing to overwrite a file this command reads\n$")
  file(MAKE_DIRECTORY "${WORK}/links")
  file(CREATE_LINK ../out/y.npy "${WORK}/links/y.npy" SYMBOLIC)
  vkd(run "${MODEL}" --input x=out/y.npy --output-dir links --force)
  expect_exit(2)
  expect_stderr("^vkd run: output 'y' \\(links/y.npy\\) is the input 'x' \\('out/y.npy'\\); refusing to overwrite")
  # The --check graph is an input too.
  copy_to_work("${QDQ_CLONE}")
  file(RENAME "${WORK}/qdq_clone.json" "${OUT}/qdq.json")
  vkd(run "${MODEL}" --input x=${X} --output-dir out --check out/qdq.json --trace out/qdq.json --force)
  expect_exit(2)
  expect_stderr("^vkd run: --trace out/qdq.json is the --check graph; refusing to overwrite a file this command reads\n$")
  file(SHA256 "${OUT}/y.npy" now)
  if(NOT now STREQUAL sha)
    message(FATAL_ERROR "out/y.npy was changed")
  endif()
  expect_files("${OUT}" y.npy qdq.json)

elseif(CASE STREQUAL "inspect_dot_model")
  copy_to_work("${MODEL}")
  file(SHA256 "${WORK}/model.vkd" sha)
  vkd(inspect model.vkd --dot model.vkd --force)
  expect_exit(2)
  expect_stderr("^vkd inspect: --dot model.vkd is the model; refusing to overwrite a file this command reads\n$")
  file(CREATE_LINK model.vkd "${WORK}/m.dot" SYMBOLIC)
  vkd(inspect model.vkd --dot m.dot --force)
  expect_exit(2)
  expect_stderr("^vkd inspect: --dot m.dot is the model \\('model.vkd'\\); refusing to overwrite a file this command reads\n$")
  expect_unchanged(model.vkd "${sha}")
  expect_files("${WORK}" m.dot model.vkd out)

# --- Exit codes: a target that cannot be written is a path error (2) for every command, found
# before any work; a device or other non-regular file is never replaced, even with --force.
elseif(CASE STREQUAL "unwritable_targets")
  copy_to_work("${QDQ_CLONE}")
  vkd(compile qdq_clone.json -o /dev/null --force)
  expect_exit(2)
  expect_stderr("^vkd compile: output: '/dev/null' is a character device, not a regular file; refusing to replace it\n$")
  vkd(inspect "${MODEL}" --dot /dev/null --force)
  expect_exit(2)
  expect_stderr("^vkd inspect: dot file: '/dev/null' is a character device, not a regular file; refusing to replace it\n$")
  find_unwritable_dir(ro)
  regex_escape(ro_re "${ro}")
  vkd(compile qdq_clone.json -o "${ro}/m.vkd")
  expect_exit(2)
  expect_stderr("^vkd compile: output: cannot write '${ro_re}/m.vkd': directory '${ro_re}' is not writable: ")
  vkd(inspect "${MODEL}" --dot "${ro}/g.dot")
  expect_exit(2)
  expect_stderr("^vkd inspect: dot file: cannot write '${ro_re}/g.dot': directory '${ro_re}' is not writable: ")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --trace "${ro}/t.json")
  expect_exit(2)
  expect_stderr("^vkd run: trace: cannot write '${ro_re}/t.json': directory '${ro_re}' is not writable: ")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --trace nodir/t.json)
  expect_exit(2)
  expect_stderr("^vkd run: trace: cannot write 'nodir/t.json': directory 'nodir' does not exist\n$")
  file(CHMOD "${WORK}/readonly" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  expect_files("${WORK}/readonly")
  expect_files("${OUT}")

elseif(CASE STREQUAL "compile_zero_size")
  # A graph input with an empty dim: the message names the graph file and the value.
  copy_to_work("${QDQ_CLONE}")
  derive_file(qdq_clone.json zero.json "[1, 5, 7, 9]" "[1, 0, 7, 9]")
  vkd(compile zero.json -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: zero.json: value 'x': field 'shape': size 0 in dim 1 of \\[1,0,7,9\\] \\(a graph input needs every size >= 1\\)\n$")
  # An error of a later compiler pass names the graph file too.
  copy_to_work("${GRAPHS}/affine_dynamic.json")
  derive_file(affine_dynamic.json no_zero.json "\"eps\": 0.0001}" "\"eps\": 0.0001, \"preserve_zero\": false}")
  vkd(compile no_zero.json -o m.vkd)
  expect_exit(2)
  expect_stderr("^vkd compile: no_zero.json: node 3 \\(torchao.choose_qparams_affine\\): ")
  expect_files("${WORK}" qdq_clone.json zero.json affine_dynamic.json no_zero.json out)

# --- Help, version, usage.
elseif(CASE STREQUAL "help")
  foreach(form help --help -h)
    vkd(${form})
    expect_exit(0)
    expect_stdout("^usage: vkd <command> \\[options\\]\n")
    foreach(command compile devices inspect run help)
      expect_stdout("\n  ${command} +[^\n]+\n")
    endforeach()
    foreach(var VKD_DEVICE=SEL VKD_VALIDATION=1 VKD_PIPELINE_CACHE=FILE VKD_WORKGROUP_SIZE=N
                VKD_TILE_ORDER=0..3 VKD_DISABLE_INT8_DOT=1 VKD_DISABLE_SUBGROUP_ARITH=1
                VKD_DISABLE_FLOAT16=1 VKD_DISABLE_COOPMAT=1 VKD_DISABLE_CPU_KERNELS=1)
      regex_escape(var_re "${var}")
      expect_stdout("\n  ${var_re} +[^\n]+\n")  # one line each
    endforeach()
    expect_stdout("\nexit codes:\n  0  success\n  1  failure: [^\n]+\n[^\n]+\n  2  usage, path or input error: ")
  endforeach()
  vkd(--version)
  expect_exit(0)
  regex_escape(version_re "${VERSION}")
  expect_stdout("^vkd ${version_re}\n$")
  foreach(command compile devices inspect run)
    foreach(form --help -h)
      vkd(${command} ${form})
      expect_exit(0)
      expect_stdout("^usage: vkd ${command} ")
      if(NOT STDERR STREQUAL "")
        message(FATAL_ERROR "vkd ${command} ${form} wrote to stderr")
      endif()
    endforeach()
    vkd(help ${command})
    expect_exit(0)
    expect_stdout("^usage: vkd ${command} ")
  endforeach()
  vkd(run "${MODEL}" --input "x=${X}" --help)  # help wins over a command line that would run
  expect_exit(0)
  expect_stdout("^usage: vkd run [^\n]+\n(.*\n)*  --output-dir DIR +[^\n]+created when missing and its\n +parent exists\n")
  expect_files("${WORK}" out)
  # Every option a command's parser accepts (an unknown option's message lists them) is in its
  # synopsis (the "usage:" lines), or is another spelling of one there ("-o, --output FILE").
  foreach(command compile devices inspect run)
    vkd(${command} --no-such-option)
    expect_exit(2)
    if(NOT STDERR MATCHES "^vkd ${command}: unknown option '--no-such-option' \\(options: ([^)\n]+)\\)\n")
      message(FATAL_ERROR "vkd ${command}: an unknown option's message does not list the options")
    endif()
    string(REPLACE ", " ";" accepted "${CMAKE_MATCH_1}")
    vkd(help ${command})
    string(REGEX MATCH "^usage: [^\n]*(\n [^\n]*)*" synopsis "${STDOUT}")
    foreach(option IN LISTS accepted)
      regex_escape(option_re "${option}")
      if(synopsis MATCHES "(\\[| )${option_re}(\\]| |=)")
        continue()
      endif()
      if(STDOUT MATCHES "\n  (-[-a-z]+), ${option_re} ")
        regex_escape(alias_re "${CMAKE_MATCH_1}")
        if(synopsis MATCHES "(\\[| )${alias_re}(\\]| |=)")
          continue()
        endif()
      endif()
      message(FATAL_ERROR "vkd help ${command}: ${option} is not in the synopsis:\n${synopsis}")
    endforeach()
  endforeach()
  # The graph IR's format is in compiler/README.md.
  vkd(help compile)
  expect_stdout("\ncompile a graph IR file \\(its format: compiler/README.md\\) into a delegate blob\n")
  vkd(help nope)
  expect_exit(2)
  expect_stderr("^vkd help: unknown command 'nope'\nusage: vkd <command>")
  vkd(nope)
  expect_exit(2)
  expect_stderr("^vkd: unknown command 'nope'\nusage: vkd <command>")
  vkd()
  expect_exit(2)
  expect_stderr("^usage: vkd <command>")
  # A usage error prints that command's usage.
  vkd(inspect)
  expect_exit(2)
  expect_stderr("^vkd inspect: missing MODEL.vkd\nusage: vkd inspect MODEL.vkd")

# --- run --output-dir: created when its parent exists; every path checked before anything is
# written (or created).
elseif(CASE STREQUAL "run_output_dir_created")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir new/ --trace new/t.json)
  expect_exit(0)
  expect_stdout("\ncreated output directory new/\n")
  expect_same_npy("${WORK}/new/y.npy" "${FIXTURE}/expected.npy")
  expect_files("${WORK}/new" t.json y.npy)
  # A missing --check graph: exit 2 before anything is written or created.
  vkd(run "${MODEL}" --input "x=${X}" --output-dir new2 --check missing.json)
  expect_exit(2)
  expect_stderr("^vkd run: --check: cannot read graph file 'missing.json': no such file\n$")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --trace t.json --check missing.json)
  expect_exit(2)
  expect_files("${OUT}")
  expect_files("${WORK}" new out)

# --- Wording: --check messages name the graph once ("--check: FILE: ...", not "--check FILE:
# FILE: ..."), and a model input the graph lacks is found before the run.
elseif(CASE STREQUAL "run_check_messages")
  copy_to_work("${GRAPHS}/malformed.json" "${QDQ_CLONE}")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --check malformed.json)
  expect_exit(2)
  expect_stderr("^vkd run: --check: malformed.json: malformed JSON at byte ")
  derive_file(qdq_clone.json other_input.json "\"x\"" "\"x2\"")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --check other_input.json)
  expect_exit(2)
  expect_stderr("^vkd run: --check: model input 'x' is not an input of other_input.json\n$")
  expect_files("${OUT}")

else()
  message(FATAL_ERROR "cli_case.cmake: unknown case '${CASE}'")
endif()
