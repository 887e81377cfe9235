# One test case of the vkd CLI (cmake -P). Runs `vkd` and checks the exit code, the message on
# stderr and the files left behind; any failed check is a FATAL_ERROR, so the test fails.
#
#   -DCASE=name        which case (see the if/elseif chain below; test/cli/CMakeLists.txt lists them)
#   -DVKD=path         the vkd binary
#   -DNPY_COMPARE=path exact .npy comparison tool
#   -DFIXTURE=dir      make_qcd_blob's output (model.vkd, x.npy, expected.npy, bad inputs)
#   -DWORK=dir         scratch directory of this case (emptied first)
#
# A case that cannot be set up on this machine prints VKD_CLI_SKIP (the test's
# SKIP_REGULAR_EXPRESSION) and stops.
cmake_minimum_required(VERSION 3.22)

foreach(_var CASE VKD NPY_COMPARE FIXTURE WORK)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "cli_case.cmake: -D${_var}= missing")
  endif()
endforeach()

set(MODEL "${FIXTURE}/model.vkd")
set(X "${FIXTURE}/x.npy")
set(OUT "${WORK}/out")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${OUT}")

# Escapes `str` for use inside a regular expression.
function(regex_escape out str)
  string(REGEX REPLACE "([][+.*()^$?|\\\\{}])" "\\\\\\1" escaped "${str}")
  set(${out} "${escaped}" PARENT_SCOPE)
endfunction()
regex_escape(WORK_RE "${WORK}")

# vkd(args...): runs vkd in WORK; sets RC, STDOUT, STDERR.
function(vkd)
  execute_process(COMMAND "${VKD}" ${ARGN}
    WORKING_DIRECTORY "${WORK}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " cmdline "${ARGN}")
  message("$ vkd ${cmdline}\n--- exit code ${rc}\n--- stdout:\n${out}--- stderr:\n${err}---")
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

set(SENTINEL "sentinel: must not be overwritten\n")

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
  expect_stdout("bench: 3 warm-up \\+ 3 timed runs: host wall median [0-9.]+ ms, min [0-9.]+ ms; GPU total median")
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
  vkd(run "${MODEL}" --input "x=${X}" --output-dir nope)
  expect_exit(2)
  expect_stderr("vkd run: output directory 'nope' does not exist")
  file(WRITE "${WORK}/plain_file" "x")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir plain_file)
  expect_exit(2)
  expect_stderr("vkd run: output directory 'plain_file' is not a directory")
  expect_files("${WORK}" out plain_file)

elseif(CASE STREQUAL "unwritable_output_dir")
  # A read-only directory stops everyone but root; root gets EACCES on sysfs.
  set(ro "${WORK}/readonly")
  file(MAKE_DIRECTORY "${ro}")
  file(CHMOD "${ro}" PERMISSIONS OWNER_READ OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E touch "${ro}/probe" RESULT_VARIABLE ro_writable
                  OUTPUT_QUIET ERROR_QUIET)
  set(target "${ro}")
  if(ro_writable EQUAL 0)
    file(REMOVE "${ro}/probe")
    execute_process(COMMAND "${CMAKE_COMMAND}" -E touch "/sys/vkd_cli_probe"
                    RESULT_VARIABLE sys_writable OUTPUT_QUIET ERROR_QUIET)
    if(sys_writable EQUAL 0 OR NOT IS_DIRECTORY "/sys")
      file(REMOVE "/sys/vkd_cli_probe")
      message("VKD_CLI_SKIP: no unwritable directory on this machine")
      return()
    endif()
    set(target "/sys")
  endif()
  vkd(run "${MODEL}" --input "x=${X}" --output-dir "${target}")
  file(CHMOD "${ro}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  expect_exit(2)
  regex_escape(target_re "${target}")
  expect_stderr("vkd run: output directory '${target_re}' is not writable: ")
  expect_files("${ro}")

elseif(CASE STREQUAL "bad_bench")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --bench 0)
  expect_exit(2)
  expect_stderr("vkd run: --bench needs a whole number in \\[1, 1000000\\], got '0'")
  vkd(run "${MODEL}" --input "x=${X}" --output-dir out --bogus)
  expect_exit(2)
  expect_stderr("vkd run: unknown option '--bogus'\nusage: vkd")
  vkd(run "${MODEL}" --input "x" --output-dir out)
  expect_exit(2)
  expect_stderr("vkd run: --input needs NAME=FILE.npy, got 'x'")
  expect_files("${OUT}")

else()
  message(FATAL_ERROR "cli_case.cmake: unknown case '${CASE}'")
endif()
