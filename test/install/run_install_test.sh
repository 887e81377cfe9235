#!/usr/bin/env bash
# CTest `install_and_app`: the installed package works for an outside app.
#
#  1. cmake --install BUILD_DIR into a temporary prefix; check the file list, each .so's exported
#     symbols (only vkd_* C functions and vkd:: API) and its dependencies (libvkdelegate.so:
#     libvulkan.so.1 plus the C/C++ runtime only; libvkdmodel.so: libvkdelegate.so.0 plus the
#     runtime), and that nothing internal (vkd_runtime, ...) was installed;
#     and that libvkdmodel.so finds libvkdelegate.so next to it (RUNPATH $ORIGIN);
#  2. build test/install/app (C app, C++ app, whole-model app, and every example program of the
#     documentation: README.md's and docs/DELEGATE_API.md's C and C++ programs, delegate and model
#     APIs, extracted by test/docs/check_doc_examples.py --extract-to) with
#     find_package(vkdelegate) and -DCMAKE_PREFIX_PATH=prefix;
#  3. build the same C app with a plain `cc ... $(pkg-config --cflags --libs vkdelegate)`, the
#     model app with `c++ ... $(pkg-config --cflags --libs vkdmodel)` and every documentation
#     example with its documented line (`$(pkg-config --cflags --libs LIB)` plus the -rpath to
#     `pkg-config --variable=libdir LIB` that docs/DELEGATE_API.md gives for a prefix outside
#     the loader's paths);
#  4. write the model, input and CPU-reference output (vkd_make_app_blob);
#  5. run the apps (they compare exactly with the reference and test the C API's error paths)
#     and every example, both builds, from a prefix outside the build tree with LD_LIBRARY_PATH
#     unset (as an app's user runs it), and check that a wrong expected file makes the app fail.
# Exits non-zero on the first failure. VKD_KEEP_INSTALL_TEST=1 keeps the temporary directory.
#
# usage: run_install_test.sh --build-dir DIR --make-blob EXE --source-dir DIR [--python PYTHON]
#                            [--cmake CMAKE] [--generator GEN] [--cc CC] [--cxx CXX]
set -euo pipefail

BUILD_DIR="" MAKE_BLOB="" SOURCE_DIR="" PYTHON=python3 CMAKE=cmake GENERATOR=""
CC_BIN="${CC:-cc}" CXX_BIN="${CXX:-c++}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --make-blob) MAKE_BLOB="$2"; shift 2 ;;
    --source-dir) SOURCE_DIR="$2"; shift 2 ;;
    --python) PYTHON="$2"; shift 2 ;;
    --cmake) CMAKE="$2"; shift 2 ;;
    --generator) GENERATOR="$2"; shift 2 ;;
    --cc) CC_BIN="$2"; shift 2 ;;
    --cxx) CXX_BIN="$2"; shift 2 ;;
    *) echo "run_install_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [ -z "$BUILD_DIR" ] || [ -z "$MAKE_BLOB" ] || [ -z "$SOURCE_DIR" ]; then
  echo "usage: $0 --build-dir DIR --make-blob EXE --source-dir DIR" >&2
  exit 2
fi
# An app's user has no LD_LIBRARY_PATH pointing at the prefix: the installed libraries and the
# apps' RUNPATHs alone must find everything.
unset LD_LIBRARY_PATH

HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/vkd-install-test.XXXXXX")"
PREFIX="$WORK/prefix"
if [ "${VKD_KEEP_INSTALL_TEST:-0}" = "1" ]; then
  echo "keeping $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi

step() { printf '\n=== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# --- 1. install ------------------------------------------------------------------------------
step "cmake --install $BUILD_DIR --prefix $PREFIX"
"$CMAKE" --install "$BUILD_DIR" --prefix "$PREFIX"
(cd "$PREFIX" && find . \( -type f -o -type l \) | sort)

LIB="$(find "$PREFIX" -name libvkdelegate.so -print -quit)"
[ -n "$LIB" ] || fail "libvkdelegate.so not installed"
LIBDIR="$(dirname "$LIB")"
MODEL_LIB="$LIBDIR/libvkdmodel.so"
for f in \
    "$LIBDIR/libvkdelegate.so.0" \
    "$MODEL_LIB" "$LIBDIR/libvkdmodel.so.0" \
    "$PREFIX/include/vkdelegate/vkd_delegate.h" \
    "$PREFIX/include/vkdelegate/Delegate.hpp" \
    "$PREFIX/include/vkdelegate/vkd_model.h" \
    "$PREFIX/include/vkdelegate/Model.hpp" \
    "$LIBDIR/pkgconfig/vkdmodel.pc" \
    "$LIBDIR/cmake/vkdelegate/vkdelegateConfig.cmake" \
    "$LIBDIR/cmake/vkdelegate/vkdelegateConfigVersion.cmake" \
    "$LIBDIR/cmake/vkdelegate/vkdelegateTargets.cmake" \
    "$LIBDIR/pkgconfig/vkdelegate.pc" \
    "$PREFIX/bin/vkd"; do
  [ -e "$f" ] || fail "not installed: ${f#"$PREFIX"/}"
done
# (The Python package under lib/python3 is not searched: vkdelegate/runtime/ is its Python runtime.
# libvkd_executorch.so, the ExecuTorch backend where it is built, is public: apps link it.)
internal="$(find "$PREFIX" -path "$PREFIX/lib/python3" -prune -o \( -name '*.a' \
            -o \( -name 'libvkd_*' ! -name libvkd_executorch.so \) \
            -o -name '*ShaderRegistry*' -o -path '*/runtime/*' -o -path '*/serialization/*' \) -print)"
[ -z "$internal" ] || fail "internal files installed: $internal"

# The Python package installed with the libraries finds them and vkd in the prefix (no
# VKD_LIBRARY_DIR, no build tree): vkdelegate._native, standard library only.
step "vkdelegate._native from the prefix"
PYPKG="$(find "$PREFIX" -path '*/vkdelegate/_native.py' -print -quit)"
[ -n "$PYPKG" ] || fail "the Python package is not installed"
found="$(cd "$WORK" && env -u VKD_LIBRARY_DIR PYTHONPATH="$(dirname "$(dirname "$PYPKG")")" \
  "$PYTHON" -c 'from vkdelegate import _native; print(_native.library_dir()); print(_native.vkd_binary())')"
[ "$found" = "$LIBDIR"$'\n'"$PREFIX/bin/vkd" ] || fail "vkdelegate._native found: $found"

# check_exports LIB REQUIRED_C_FUNCTION...: LIB exports only vkd_* C functions and the vkd:: API
# (never a private Impl), the required ones among them.
check_exports() {
  local lib="$1" name
  name="$(basename "$lib")"
  shift
  step "exported symbols of $name"
  nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u > "$WORK/symbols.txt"
  c++filt < "$WORK/symbols.txt" > "$WORK/symbols.demangled.txt"
  paste "$WORK/symbols.txt" "$WORK/symbols.demangled.txt" | while IFS=$'\t' read -r raw demangled; do
    case "$raw" in vkd_*) continue ;; esac
    case "$demangled" in
      vkd::*::Impl::*) ;;  # private implementation: must stay hidden
      vkd::*|"typeinfo for vkd::"*|"typeinfo name for vkd::"*|"vtable for vkd::"*) continue ;;
    esac
    echo "$demangled"
  done > "$WORK/symbols.unexpected.txt"
  c_count="$(grep -c '^vkd_' "$WORK/symbols.txt" || true)"
  cpp_count="$(grep -c '^vkd::' "$WORK/symbols.demangled.txt" || true)"
  total="$(wc -l < "$WORK/symbols.txt")"
  echo "exported: $total symbols ($c_count vkd_* C functions, $cpp_count vkd:: C++ symbols)"
  sed 's/^/  /' "$WORK/symbols.demangled.txt"
  if [ -s "$WORK/symbols.unexpected.txt" ]; then
    sed 's/^/  unexpected: /' "$WORK/symbols.unexpected.txt" >&2
    fail "$name exports symbols outside vkd_* / vkd::"
  fi
  for fn in "$@"; do
    grep -qx "$fn" "$WORK/symbols.txt" || fail "C function $fn is not exported by $name"
  done
}
check_exports "$LIB" vkd_status_name vkd_options_init vkd_delegate_init vkd_init_error \
  vkd_delegate_input_count vkd_delegate_output_count vkd_delegate_input_info \
  vkd_delegate_output_info vkd_delegate_execute vkd_delegate_profile_count \
  vkd_delegate_profile_entry vkd_delegate_last_error vkd_delegate_destroy
check_exports "$MODEL_LIB" vkd_model_load vkd_model_load_error vkd_model_input_count \
  vkd_model_output_count vkd_model_input_info vkd_model_output_info vkd_model_execute \
  vkd_model_last_error vkd_model_destroy

# check_dependencies LIB NEEDED...: LIB needs the NEEDED libraries and otherwise only the C/C++
# runtime, and keeps no RUNPATH into the build tree.
check_dependencies() {
  local lib="$1" needed name
  name="$(basename "$lib")"
  shift
  step "dependencies of $name"
  readelf -d "$lib" | grep -E 'NEEDED|RPATH|RUNPATH' || true
  ldd "$lib" || true
  readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r needed; do
    case " $* " in *" $needed "*) continue ;; esac
    case "$needed" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|\
      libstdc++.so.*|libgcc_s.so.*) ;;
      *) fail "unexpected dependency of $name: $needed" ;;
    esac
  done
  for needed in "$@"; do
    readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -qxF "$needed" ||
      fail "$needed not NEEDED by $name"
  done
  if readelf -d "$lib" | grep -E 'RPATH|RUNPATH' | grep -qF "$BUILD_DIR"; then
    fail "installed $name keeps a RUNPATH into the build tree"
  fi
}
# runpath_of LIB: its DT_RUNPATH / DT_RPATH ("" when none).
runpath_of() { readelf -d "$1" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p'; }
check_dependencies "$LIB" libvulkan.so.1
[ -z "$(runpath_of "$LIB")" ] || fail "libvkdelegate.so has a RUNPATH: $(runpath_of "$LIB")"
check_dependencies "$MODEL_LIB" libvkdelegate.so.0
# An app that calls only vkd_model_* has no NEEDED entry of its own on libvkdelegate.so (the
# linker drops an unused -lvkdelegate under --as-needed, Debian's and Ubuntu's default), so
# libvkdmodel.so must find it itself: next to it, wherever the prefix is.
# shellcheck disable=SC2016  # a literal $ORIGIN
[ "$(runpath_of "$MODEL_LIB")" = '$ORIGIN' ] ||
  fail "libvkdmodel.so's RUNPATH is '$(runpath_of "$MODEL_LIB")', not \$ORIGIN"

step "the documentation's example programs"
EXAMPLES="$WORK/doc-examples"
"$PYTHON" "$SOURCE_DIR/test/docs/check_doc_examples.py" --source-dir "$SOURCE_DIR" \
  --extract-to "$EXAMPLES"
cat "$EXAMPLES/examples.txt"

# --- 2. find_package ----------------------------------------------------------------------------
step "find_package(vkdelegate): configure and build test/install/app"
gen_args=()
[ -n "$GENERATOR" ] && gen_args=(-G "$GENERATOR")
"$CMAKE" -S "$HERE/app" -B "$WORK/app-build" "${gen_args[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DVKD_DOC_EXAMPLES_DIR="$EXAMPLES" \
  -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_CXX_COMPILER="$CXX_BIN"
grep -q "^vkdelegate_DIR:PATH=$LIBDIR/cmake/vkdelegate\$" "$WORK/app-build/CMakeCache.txt" ||
  fail "find_package did not use the installed package: $(grep vkdelegate_DIR "$WORK/app-build/CMakeCache.txt")"
"$CMAKE" --build "$WORK/app-build"
APP_CMAKE="$WORK/app-build/vkd_install_app"
APP_CPP="$WORK/app-build/vkd_install_app_cpp"
APP_MODEL="$WORK/app-build/vkd_install_model_app"

# --- 3. pkg-config ------------------------------------------------------------------------------
step "pkg-config vkdelegate: plain cc build"
command -v pkg-config >/dev/null ||
  fail "pkg-config not found (Debian package 'pkg-config'; add it to third-party/install_deps.sh)"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
pc_flags="$(pkg-config --cflags --libs vkdelegate)"
pc_libdir="$(pkg-config --variable=libdir vkdelegate)"
echo "pkg-config --modversion: $(pkg-config --modversion vkdelegate)"
echo "pkg-config --cflags --libs: $pc_flags"
case "$pc_flags" in *"$PREFIX"*) ;; *) fail "pkg-config flags do not point into $PREFIX" ;; esac
APP_PC="$WORK/app-pkgconfig"
# shellcheck disable=SC2086  # the flags are meant to split
"$CC_BIN" -std=c99 -pedantic -Wall -Wextra -Werror -o "$APP_PC" "$HERE/app.c" $pc_flags \
  -Wl,-rpath,"$pc_libdir"
APP_MODEL_PC="$WORK/app-model-pkgconfig"
# shellcheck disable=SC2046  # the flags are meant to split
"$CXX_BIN" -std=c++17 -pedantic -Wall -Wextra -Werror -o "$APP_MODEL_PC" "$HERE/app_model.cpp" \
  $(pkg-config --cflags --libs vkdmodel) -Wl,-rpath,"$pc_libdir"


# Each documentation example, built as its documentation says (docs/DELEGATE_API.md).
step "pkg-config: the documentation's examples"
DOC_APPS=()
while read -r name lang lib; do
  if [ "$lang" = c ]; then compile=("$CC_BIN" -std=c11); else compile=("$CXX_BIN" -std=c++17); fi
  exe="$WORK/doc-pkgconfig-$name"
  # shellcheck disable=SC2046  # the flags are meant to split
  (set -x; "${compile[@]}" -pedantic -Wall -Wextra -Werror "$EXAMPLES/$name.$lang" \
     $(pkg-config --cflags --libs "$lib") -Wl,-rpath,"$(pkg-config --variable=libdir "$lib")" \
     -o "$exe")
  DOC_APPS+=("$exe" "$WORK/app-build/doc_$name")
done < "$EXAMPLES/examples.txt"

# Every app and example loads the installed libraries (ldd also resolves the indirect ones:
# libvkdmodel.so's libvkdelegate.so.0).
for app in "$APP_CMAKE" "$APP_CPP" "$APP_PC" "$APP_MODEL" "$APP_MODEL_PC" "${DOC_APPS[@]}"; do
  for soname in libvkdelegate.so.0 libvkdmodel.so.0; do
    resolved="$(ldd "$app" | awk -v so="$soname" '$1 == so {print $3 == "not" ? "not found" : $3}')"
    [ -n "$resolved" ] || continue  # a delegate app does not use libvkdmodel
    echo "$(basename "$app"): $soname => $resolved"
    case "$resolved" in
      "$LIBDIR"/*) ;;
      *) ldd "$app"; fail "$(basename "$app") does not load the installed $soname" ;;
    esac
  done
done

# --- 4. model, input, CPU reference -------------------------------------------------------------
step "model and CPU reference"
"$MAKE_BLOB" "$WORK"

# --- 5. run -------------------------------------------------------------------------------------
# The app fails itself when vkd_delegate_validation_message_count() > 0; scanning stderr for
# "[vkd validation ...]" lines also catches messages printed before the handle existed.
run_app() {  # run_app LABEL COMMAND...
  local label="$1" log="$WORK/run.log" rc
  shift
  set +e
  "$@" 2>&1 | tee "$log"
  rc="${PIPESTATUS[0]}"
  set -e
  [ "$rc" -eq 0 ] || fail "$label (exit status $rc)"
  if grep -q '\[vkd validation' "$log"; then
    fail "$label: Vulkan validation messages"
  fi
}
export VKD_VALIDATION="${VKD_VALIDATION:-1}"
step "run: C app (find_package build), VKD_VALIDATION=$VKD_VALIDATION"
run_app "C app (find_package)" "$APP_CMAKE" "$WORK/model.vkd" "$WORK/input.bin" "$WORK/expected.bin"
step "run: C app (pkg-config build)"
run_app "C app (pkg-config)" "$APP_PC" "$WORK/model.vkd" "$WORK/input.bin" "$WORK/expected.bin"
step "run: C app with the formula input (no comparison)"
run_app "C app (formula input)" "$APP_PC" "$WORK/model.vkd" -
step "run: C++ app"
run_app "C++ app" "$APP_CPP" "$WORK/model.vkd" "$WORK/input.bin" "$WORK/expected.bin"
step "run: model app (find_package build)"
run_app "model app (find_package)" "$APP_MODEL" "$WORK/model.vkd" "$WORK/input.bin" "$WORK/expected.bin"
step "run: model app (pkg-config build)"
run_app "model app (pkg-config)" "$APP_MODEL_PC" "$WORK/model.vkd" "$WORK/input.bin" "$WORK/expected.bin"
for app in "${DOC_APPS[@]}"; do
  step "run: documentation example $(basename "$app")"
  run_app "$(basename "$app")" "$app" "$WORK/model.vkd"
done
step "run: C app against a wrong expected file (must fail)"
if "$APP_PC" "$WORK/model.vkd" "$WORK/input.bin" "$WORK/expected_bad.bin" > "$WORK/bad.log" 2>&1; then
  cat "$WORK/bad.log"
  fail "the app accepted a wrong expected output"
fi
grep -F 'outputs differ' "$WORK/bad.log" ||
  { cat "$WORK/bad.log"; fail "with a wrong expected file the app failed for another reason"; }
step "run: installed vkd CLI"
"$PREFIX/bin/vkd" devices || fail "installed vkd devices"

printf '\ninstall_and_app: PASS\n'
