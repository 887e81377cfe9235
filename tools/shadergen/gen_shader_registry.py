#!/usr/bin/env python3
"""Build-time shader toolchain for vkdelegate.

Reads the variant axes beside every shader (shaders/<name>.variants.json, in
file-name order: the manifest), expands every family into
its variants (cartesian product of the family's axes), compiles each variant
with glslangValidator, validates it with spirv-val, reflects the SPIR-V binary
(descriptor bindings, push-constant size, specialization constants, local
size, required capabilities), checks the project's shader conventions and
writes a C++ registry:

  <out-header>  vkd/generated/ShaderRegistry.h  (enum class Kernel, ShaderInfo)
  <out-cpp>     the embedded SPIR-V words and the ShaderInfo table

Compilation runs in parallel and is cached per variant under --cache-dir: a
variant is recompiled only when its source, one of the headers it included
(as reported by glslangValidator --depfile), its defines, its include dirs or
the tool versions changed. Outputs are rewritten only when their content
changes, so an unchanged build recompiles no C++ either.

Only the Python standard library is used. See tools/shadergen/README.md.
"""

import argparse
import concurrent.futures
import hashlib
import itertools
import json
import os
import re
import struct
import subprocess
import sys
import threading

# Bump when the way variants are compiled changes, to invalidate every cache entry.
CACHE_SCHEME = 1
TARGET_ENV = "vulkan1.1"
MAX_PUSH_CONSTANT_BYTES = 128
LOCAL_SIZE_SPEC_IDS = (0, 1, 2)
MAX_DETAILED_ERRORS = 4


class ShaderGenError(Exception):
    """A user-facing error: printed as is, then the build stops."""


# ---------------------------------------------------------------------------
# Manifest
# ---------------------------------------------------------------------------

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char8_t char16_t char32_t class compl concept const consteval constexpr
constinit const_cast continue co_await co_return co_yield decltype default
delete do double dynamic_cast else enum explicit export extern false float for
friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast
requires return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union
unsigned using virtual void volatile wchar_t while xor xor_eq
""".split())

IDENT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
SUFFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*$")
DEFINE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
VALUE_RE = re.compile(r"^[A-Za-z0-9_.+\-]+$")

TOP_KEYS = {"families", "comment", "description"}
FAMILY_KEYS = {"family", "axes", "comment", "description"}
AXIS_KEYS = {"define", "values", "comment", "description"}


class Variant:
    def __init__(self, name, family, source, defines, axis_values):
        self.name = name                # C++ identifier, e.g. q8ta_quantize_buffer_4w4c
        self.family = family            # family name
        self.source = source            # absolute path of the GLSL source
        self.defines = defines          # [(define, value)] in axis order
        self.axis_values = axis_values  # [suffix] in axis order


class Family:
    def __init__(self, name, source, axes):
        self.name = name
        self.source = source  # absolute path
        self.axes = axes      # [(define, [(suffix, value)])]
        self.variants = []    # [Variant] in table order (first axis outermost)


def _check_identifier(what, name):
    if not isinstance(name, str) or not IDENT_RE.match(name):
        raise ShaderGenError(
            f"{what} {name!r} is not a valid C++ identifier "
            "(letters, digits and '_', starting with a letter)")
    if "__" in name:
        raise ShaderGenError(f"{what} {name!r} contains '__' (reserved in C++)")
    if name in CPP_KEYWORDS:
        raise ShaderGenError(f"{what} {name!r} is a C++ keyword")


def _check_keys(where, obj, allowed):
    if not isinstance(obj, dict):
        raise ShaderGenError(f"{where} must be a JSON object")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ShaderGenError(
            f"{where}: unknown key(s) {', '.join(unknown)} "
            f"(allowed: {', '.join(sorted(allowed))})")


VARIANTS_SUFFIX = ".variants.json"


def load_shader_variants(source_dir, include_dir_names):
    """The families of every shader: shaders/<name>.glsl's are in <name>.variants.json beside it.

    Files are read in name order, each file's families in its order: that is the Kernel order.
    """
    include_dirs = []
    for d in include_dir_names:
        path = os.path.normpath(os.path.join(source_dir, d))
        if not os.path.isdir(path):
            raise ShaderGenError(f"include dir {d!r} does not exist (looked for {path})")
        include_dirs.append(path)

    try:
        names = sorted(os.listdir(source_dir))
    except OSError as e:
        raise ShaderGenError(f"cannot list the shader dir {source_dir}: {e}")
    shaders = {n[:-len(".glsl")] for n in names if n.endswith(".glsl")}
    variant_files = [n for n in names if n.endswith(VARIANTS_SUFFIX)]
    described = {n[:-len(VARIANTS_SUFFIX)] for n in variant_files}
    undescribed = sorted(shaders - described)
    if undescribed:
        raise ShaderGenError(
            f"{', '.join(n + '.glsl' for n in undescribed)} in {source_dir}: no "
            f"<name>{VARIANTS_SUFFIX} beside it (the shader's families and their axes)")
    orphans = sorted(described - shaders)
    if orphans:
        raise ShaderGenError(
            f"{', '.join(n + VARIANTS_SUFFIX for n in orphans)} in {source_dir}: no <name>.glsl "
            "beside it")
    if not variant_files:
        raise ShaderGenError(f"no *{VARIANTS_SUFFIX} in the shader dir {source_dir}")

    families = []
    seen_families = {}
    seen_variants = {}
    for file_name in variant_files:
        path = os.path.join(source_dir, file_name)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as e:
            raise ShaderGenError(f"cannot read {path}: {e}")
        except json.JSONDecodeError as e:
            raise ShaderGenError(f"{path} is not valid JSON: {e}")
        where = path
        _check_keys(where, data, TOP_KEYS)
        raw_families = data.get("families")
        if not isinstance(raw_families, list) or not raw_families:
            raise ShaderGenError(f"{where}: 'families' must be a non-empty list")
        src_path = os.path.join(source_dir, file_name[:-len(VARIANTS_SUFFIX)] + ".glsl")
        for fi, raw in enumerate(raw_families):
            family = _load_family(f"{where}: families[{fi}]", where, raw, src_path, seen_variants)
            if family.name in seen_families:
                raise ShaderGenError(f"{where}: family '{family.name}' also declared in "
                                     f"{seen_families[family.name]}")
            seen_families[family.name] = where
            families.append(family)

    count = sum(len(f.variants) for f in families)
    if count > 0xFFFF:
        raise ShaderGenError(f"{count} variants do not fit enum class Kernel : uint16_t")
    return include_dirs, families


def _load_family(fwhere, where, raw, src_path, seen_variants):
    _check_keys(fwhere, raw, FAMILY_KEYS)
    name = raw.get("family")
    _check_identifier(f"{fwhere}: family name", name)
    fwhere = f"{where}: family '{name}'"

    raw_axes = raw.get("axes", [])
    if not isinstance(raw_axes, list):
        raise ShaderGenError(f"{fwhere}: 'axes' must be a list")
    axes = []
    seen_defines = set()
    for ai, axis in enumerate(raw_axes):
        awhere = f"{fwhere}: axes[{ai}]"
        _check_keys(awhere, axis, AXIS_KEYS)
        define = axis.get("define")
        if not isinstance(define, str) or not DEFINE_RE.match(define) \
                or define.startswith("GL_") or define.startswith("__"):
            raise ShaderGenError(f"{awhere}: 'define' {define!r} is not a usable macro name")
        if define in seen_defines:
            raise ShaderGenError(f"{awhere}: define {define} used by two axes")
        seen_defines.add(define)
        raw_values = axis.get("values")
        if not isinstance(raw_values, list) or not raw_values:
            raise ShaderGenError(f"{awhere} ({define}): 'values' must be a non-empty list")
        values = []
        seen_suffixes = set()
        for vi, pair in enumerate(raw_values):
            vwhere = f"{awhere} ({define}): values[{vi}]"
            if not isinstance(pair, list) or len(pair) != 2:
                raise ShaderGenError(f"{vwhere} must be a pair [\"suffix\", \"macro value\"]")
            suffix, value = pair
            if isinstance(value, bool):
                raise ShaderGenError(f"{vwhere}: value must be a string or an integer")
            if isinstance(value, int):
                value = str(value)
            if not isinstance(suffix, str) or not SUFFIX_RE.match(suffix):
                raise ShaderGenError(
                    f"{vwhere}: suffix {suffix!r} must be letters, digits and '_' "
                    "(not starting with '_')")
            if not isinstance(value, str) or not VALUE_RE.match(value):
                raise ShaderGenError(
                    f"{vwhere}: macro value {value!r} must be a non-empty token "
                    "(letters, digits, '_', '.', '+', '-')")
            if suffix in seen_suffixes:
                raise ShaderGenError(f"{vwhere}: suffix {suffix!r} used twice in this axis")
            seen_suffixes.add(suffix)
            values.append((suffix, value))
        axes.append((define, values))

    family = Family(name, src_path, axes)
    for combo in itertools.product(*[range(len(vals)) for _, vals in axes]):
        suffixes = [axes[a][1][i][0] for a, i in enumerate(combo)]
        vname = "_".join([name] + suffixes)
        _check_identifier(f"{fwhere}: variant name", vname)
        if vname in seen_variants:
            raise ShaderGenError(
                f"{fwhere}: variant name {vname} collides with a variant of "
                f"family '{seen_variants[vname]}'")
        seen_variants[vname] = name
        defines = [(axes[a][0], axes[a][1][i][1]) for a, i in enumerate(combo)]
        family.variants.append(Variant(vname, name, src_path, defines, suffixes))
    return family


# ---------------------------------------------------------------------------
# Compilation with a per-variant cache
# ---------------------------------------------------------------------------

def tool_version(exe):
    try:
        res = subprocess.run([exe, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, check=False)
    except OSError as e:
        raise ShaderGenError(f"cannot run {exe}: {e}")
    return res.stdout.strip()


HEADER_EXTENSIONS = (".glslh", ".h")


def list_headers(dirs):
    found = set()
    for top in dirs:
        for root, _, files in os.walk(top):
            for name in files:
                if name.endswith(HEADER_EXTENSIONS):
                    found.add(os.path.join(root, name))
    return sorted(found)


class FileHasher:
    """Memoised content hashes; files shared by many variants are read once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._cache = {}

    def digest(self, path):
        with self._lock:
            if path in self._cache:
                return self._cache[path]
        try:
            with open(path, "rb") as f:
                value = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            value = None  # missing: never matches a recorded hash
        with self._lock:
            self._cache[path] = value
        return value


def parse_depfile(path, cwd):
    """Prerequisites of a make-style depfile written by glslangValidator."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read().replace("\\\n", " ")
    _, sep, prereqs = text.partition(": ")
    if not sep:
        return []
    deps = []
    token = ""
    i = 0
    while i < len(prereqs):
        c = prereqs[i]
        if c == "\\" and i + 1 < len(prereqs) and prereqs[i + 1] == " ":
            token += " "
            i += 2
            continue
        if c.isspace():
            if token:
                deps.append(token)
            token = ""
        else:
            token += c
        i += 1
    if token:
        deps.append(token)
    return [os.path.normpath(os.path.join(cwd, d)) for d in deps]


def _indent(text, prefix="    "):
    lines = text.rstrip().splitlines() or ["(no output)"]
    return "\n".join(prefix + line for line in lines)


class Compiler:
    def __init__(self, glslang, spirv_val, include_dirs, cache_dir, source_dir):
        self.glslang = glslang
        self.spirv_val = spirv_val
        self.include_dirs = include_dirs
        self.cache_dir = cache_dir
        self.source_dir = source_dir
        self.hasher = FileHasher()
        self.tool_versions = {"glslang": tool_version(glslang),
                              "spirv-val": tool_version(spirv_val)}
        # Which headers exist (not their content, which the per-variant deps
        # cover): a header added earlier in the include search order can
        # change what an unchanged #include resolves to.
        self.header_names = list_headers([source_dir] + include_dirs)
        os.makedirs(cache_dir, exist_ok=True)

    def _fingerprint(self, v):
        key = {
            "scheme": CACHE_SCHEME,
            "target_env": TARGET_ENV,
            "source": v.source,
            "defines": v.defines,
            "include_dirs": self.include_dirs,
            "tools": self.tool_versions,
            "headers": self.header_names,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

    def _paths(self, v):
        base = os.path.join(self.cache_dir, v.name)
        return base + ".spv", base + ".json"

    def _describe(self, v):
        rel = os.path.relpath(v.source, self.source_dir)
        defines = " ".join(f"-D{k}={val}" for k, val in v.defines) or "(none)"
        return f"variant '{v.name}' (family {v.family}, source {rel})\n  defines: {defines}"

    def _cached(self, v, fingerprint):
        spv_path, rec_path = self._paths(v)
        try:
            with open(rec_path, encoding="utf-8") as f:
                rec = json.load(f)
            with open(spv_path, "rb") as f:
                spv = f.read()
        except (OSError, ValueError):
            return None
        if rec.get("fingerprint") != fingerprint:
            return None
        if rec.get("spv_sha256") != hashlib.sha256(spv).hexdigest():
            return None
        deps = rec.get("deps")
        if not isinstance(deps, dict) or v.source not in deps:
            return None
        for path, digest in deps.items():
            if self.hasher.digest(path) != digest:
                return None
        return spv

    def compile(self, v):
        """Returns (spirv bytes, compiled: bool). Raises ShaderGenError."""
        fingerprint = self._fingerprint(v)
        spv = self._cached(v, fingerprint)
        if spv is not None:
            return spv, False

        spv_path, rec_path = self._paths(v)
        tmp_spv = spv_path + ".tmp"
        tmp_dep = os.path.join(self.cache_dir, v.name + ".d.tmp")
        cmd = [self.glslang, "-V", "--target-env", TARGET_ENV, "-S", "comp"]
        cmd += ["-I" + d for d in self.include_dirs]
        cmd += [f"-D{k}={val}" for k, val in v.defines]
        cmd += ["--depfile", tmp_dep, "-o", tmp_spv, v.source]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, cwd=self.source_dir, check=False)
        # glslangValidator echoes the source path on success; keep the rest.
        out = "\n".join(line for line in res.stdout.splitlines()
                        if line.strip() and line.strip() != v.source)
        if res.returncode != 0 or not os.path.isfile(tmp_spv):
            raise ShaderGenError(
                f"{self._describe(v)}\n  glslangValidator failed (exit {res.returncode}):\n"
                f"{_indent(out)}\n  command: {' '.join(cmd)}")
        if out:
            print(f"vkd shadergen: warning: {v.name}:\n{_indent(out)}", file=sys.stderr)

        vcmd = [self.spirv_val, "--target-env", TARGET_ENV, tmp_spv]
        vres = subprocess.run(vcmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, check=False)
        if vres.returncode != 0:
            raise ShaderGenError(
                f"{self._describe(v)}\n  spirv-val rejected the SPIR-V (exit {vres.returncode}):\n"
                f"{_indent(vres.stdout)}\n  command: {' '.join(vcmd)}")

        with open(tmp_spv, "rb") as f:
            spv = f.read()
        try:
            dep_paths = parse_depfile(tmp_dep, self.source_dir)
        except OSError:
            dep_paths = []
        deps = {p: self.hasher.digest(p) for p in dep_paths}
        deps[v.source] = self.hasher.digest(v.source)
        os.replace(tmp_spv, spv_path)
        rec = {"variant": v.name, "fingerprint": fingerprint,
               "spv_sha256": hashlib.sha256(spv).hexdigest(), "deps": deps}
        with open(rec_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
        os.replace(rec_path + ".tmp", rec_path)
        try:
            os.remove(tmp_dep)
        except OSError:
            pass
        return spv, True

    def prune(self, keep_names):
        keep = set()
        for n in keep_names:
            keep.add(n + ".spv")
            keep.add(n + ".json")
        for entry in os.listdir(self.cache_dir):
            if entry not in keep:
                try:
                    os.remove(os.path.join(self.cache_dir, entry))
                except OSError:
                    pass


# ---------------------------------------------------------------------------
# SPIR-V reflection
# ---------------------------------------------------------------------------

SPIRV_MAGIC = 0x07230203

# Opcodes
OP_NAME = 5
OP_MEMBER_NAME = 6
OP_ENTRY_POINT = 15
OP_EXECUTION_MODE = 16
OP_CAPABILITY = 17
OP_TYPE_VOID = 19
OP_TYPE_BOOL = 20
OP_TYPE_INT = 21
OP_TYPE_FLOAT = 22
OP_TYPE_VECTOR = 23
OP_TYPE_MATRIX = 24
OP_TYPE_IMAGE = 25
OP_TYPE_SAMPLER = 26
OP_TYPE_SAMPLED_IMAGE = 27
OP_TYPE_ARRAY = 28
OP_TYPE_RUNTIME_ARRAY = 29
OP_TYPE_STRUCT = 30
OP_TYPE_POINTER = 32
OP_CONSTANT_TRUE = 41
OP_CONSTANT_FALSE = 42
OP_CONSTANT = 43
OP_CONSTANT_COMPOSITE = 44
OP_SPEC_CONSTANT_TRUE = 48
OP_SPEC_CONSTANT_FALSE = 49
OP_SPEC_CONSTANT = 50
OP_SPEC_CONSTANT_COMPOSITE = 51
OP_SPEC_CONSTANT_OP = 52
OP_VARIABLE = 59
OP_DECORATE = 71
OP_MEMBER_DECORATE = 72
OP_EXECUTION_MODE_ID = 331

# Decorations
DEC_SPEC_ID = 1
DEC_BLOCK = 2
DEC_BUFFER_BLOCK = 3
DEC_ROW_MAJOR = 4
DEC_ARRAY_STRIDE = 6
DEC_MATRIX_STRIDE = 7
DEC_BUILTIN = 11
DEC_NON_WRITABLE = 24
DEC_BINDING = 33
DEC_DESCRIPTOR_SET = 34
DEC_OFFSET = 35

BUILTIN_WORKGROUP_SIZE = 25
EXEC_MODEL_GLCOMPUTE = 5
EXEC_MODE_LOCAL_SIZE = 17
EXEC_MODE_LOCAL_SIZE_ID = 38

SC_UNIFORM_CONSTANT = 0
SC_UNIFORM = 2
SC_WORKGROUP = 4
SC_PUSH_CONSTANT = 9
SC_STORAGE_BUFFER = 12
SC_PHYSICAL_STORAGE_BUFFER = 5349
# Bindings are a uint32_t bit mask in ShaderInfo::writable_bindings.
MAX_BINDINGS = 32
STORAGE_CLASS_NAMES = {0: "UniformConstant", 2: "Uniform", 9: "PushConstant", 12: "StorageBuffer"}

# Requirement bits; must match the enum written into the header.
REQUIREMENTS = [
    ("kReqInt8DotProduct", "Int8DotProduct"),
    ("kReqStorage8Bit", "Storage8Bit"),
    ("kReqStorage16Bit", "Storage16Bit"),
    ("kReqInt8Arith", "Int8Arith"),
    ("kReqFloat16Arith", "Float16Arith"),
    ("kReqInt16Arith", "Int16Arith"),
    ("kReqInt64", "Int64"),
    ("kReqFloat64", "Float64"),
    ("kReqCooperativeMatrixNV", "CooperativeMatrixNV"),
    ("kReqCooperativeMatrixKHR", "CooperativeMatrixKHR"),
    ("kReqSubgroup", "Subgroup"),
    ("kReqImageWithoutFormat", "ImageWithoutFormat"),
    ("kReqVulkanMemoryModel", "VulkanMemoryModel"),
    ("kReqSubgroupShuffle", "SubgroupShuffle"),
]
REQ_BIT = {cpp: 1 << i for i, (cpp, _) in enumerate(REQUIREMENTS)}

# OpCapability -> (capability name, Requirement bit or None when it needs no
# device feature beyond what the runtime always requires).
CAPABILITIES = {
    0: ("Matrix", None),
    1: ("Shader", None),
    43: ("Sampled1D", None),
    44: ("Image1D", None),
    46: ("SampledBuffer", None),
    47: ("ImageBuffer", None),
    50: ("ImageQuery", None),
    9: ("Float16", "kReqFloat16Arith"),
    10: ("Float64", "kReqFloat64"),
    11: ("Int64", "kReqInt64"),
    22: ("Int16", "kReqInt16Arith"),
    39: ("Int8", "kReqInt8Arith"),
    55: ("StorageImageReadWithoutFormat", "kReqImageWithoutFormat"),
    56: ("StorageImageWriteWithoutFormat", "kReqImageWithoutFormat"),
    61: ("GroupNonUniform", "kReqSubgroup"),
    62: ("GroupNonUniformVote", "kReqSubgroup"),
    63: ("GroupNonUniformArithmetic", "kReqSubgroup"),
    64: ("GroupNonUniformBallot", "kReqSubgroup"),
    65: ("GroupNonUniformShuffle", "kReqSubgroupShuffle"),
    66: ("GroupNonUniformShuffleRelative", "kReqSubgroupShuffle"),
    67: ("GroupNonUniformClustered", "kReqSubgroup"),
    68: ("GroupNonUniformQuad", "kReqSubgroup"),
    4433: ("StorageBuffer16BitAccess", "kReqStorage16Bit"),
    4434: ("UniformAndStorageBuffer16BitAccess", "kReqStorage16Bit"),
    4435: ("StoragePushConstant16", "kReqStorage16Bit"),
    4448: ("StorageBuffer8BitAccess", "kReqStorage8Bit"),
    4449: ("UniformAndStorageBuffer8BitAccess", "kReqStorage8Bit"),
    4450: ("StoragePushConstant8", "kReqStorage8Bit"),
    5345: ("VulkanMemoryModel", "kReqVulkanMemoryModel"),
    5346: ("VulkanMemoryModelDeviceScope", "kReqVulkanMemoryModel"),
    5357: ("CooperativeMatrixNV", "kReqCooperativeMatrixNV"),
    6016: ("DotProductInputAll", "kReqInt8DotProduct"),
    6017: ("DotProductInput4x8Bit", "kReqInt8DotProduct"),
    6018: ("DotProductInput4x8BitPacked", "kReqInt8DotProduct"),
    6019: ("DotProduct", "kReqInt8DotProduct"),
    6022: ("CooperativeMatrixKHR", "kReqCooperativeMatrixKHR"),
}

DESC_STORAGE_BUFFER = "StorageBuffer"
DESC_UNIFORM_BUFFER = "UniformBuffer"
DESC_STORAGE_IMAGE = "StorageImage"
DESC_COMBINED_IMAGE_SAMPLER = "CombinedImageSampler"


class Reflection:
    def __init__(self):
        self.bindings = []            # DescriptorKind names, index = binding
        self.binding_names = []       # variable names, for messages and the JSON dump
        self.binding_writable = []    # per binding: the shader may write it
        self.push_constant_bytes = 0
        self.spec_constants = []      # [(id, "Int"|"UInt"|"Float"|"Bool", name)] sorted by id
        self.local_size_from_spec = False
        self.fixed_local_size = (0, 0, 0)
        self.requirements = 0
        self.capabilities = []        # capability names, for the JSON dump
        # Workgroup (shared) memory: bytes of the variables of constant size, and a postfix
        # program for those whose array length is a specialization constant expression
        # ([(op, value)], SHARED_OPS; empty when there is none).
        self.shared_bytes = 0
        self.shared_program = []

    def writable_mask(self):
        return sum(1 << i for i, w in enumerate(self.binding_writable) if w)

    def to_json(self):
        return {
            "bindings": [{"binding": i, "kind": k, "name": n, "writable": w}
                         for i, (k, n, w) in enumerate(zip(self.bindings, self.binding_names,
                                                           self.binding_writable))],
            "push_constant_bytes": self.push_constant_bytes,
            "spec_constants": [{"id": i, "type": t, "name": n} for i, t, n in self.spec_constants],
            "local_size_from_spec": self.local_size_from_spec,
            "fixed_local_size": list(self.fixed_local_size),
            "requirements": [cpp for cpp, _ in REQUIREMENTS if self.requirements & REQ_BIT[cpp]],
            "capabilities": self.capabilities,
            "shared_bytes": self.shared_bytes,
            "shared_program": [[op, v] for op, v in self.shared_program],
        }


def _decode_string(words):
    raw = b"".join(struct.pack("<I", w) for w in words)
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")


class SpirvModule:
    def __init__(self, data):
        if len(data) % 4 != 0 or len(data) < 20:
            raise ValueError("not a SPIR-V binary (size is not a multiple of 4 or too small)")
        words = list(struct.unpack(f"<{len(data) // 4}I", data))
        if words[0] != SPIRV_MAGIC:
            words = list(struct.unpack(f">{len(data) // 4}I", data))
            if words[0] != SPIRV_MAGIC:
                raise ValueError("bad SPIR-V magic number")
        self.words = words
        self.names = {}
        self.member_names = {}        # (struct id, member) -> name
        self.decorations = {}         # id -> [(decoration, operands)]
        self.member_decorations = {}  # (struct id, member) -> [(decoration, operands)]
        self.types = {}               # id -> tuple
        self.constants = {}           # id -> (opcode, result type, operands)
        self.variables = []           # [(id, pointer type id, storage class)]
        self.capabilities = []
        self.entry_points = []        # [(execution model, id, name)]
        self.execution_modes = []     # [(opcode, entry id, mode, operands)]
        self._parse()

    def _parse(self):
        w = self.words
        i = 5
        n = len(w)
        while i < n:
            count = w[i] >> 16
            op = w[i] & 0xFFFF
            if count == 0 or i + count > n:
                raise ValueError(f"malformed instruction at word {i}")
            ops = w[i + 1:i + count]
            i += count
            if op == OP_NAME:
                self.names[ops[0]] = _decode_string(ops[1:])
            elif op == OP_MEMBER_NAME:
                self.member_names[(ops[0], ops[1])] = _decode_string(ops[2:])
            elif op == OP_ENTRY_POINT:
                self.entry_points.append((ops[0], ops[1], _decode_string(ops[2:])))
            elif op in (OP_EXECUTION_MODE, OP_EXECUTION_MODE_ID):
                self.execution_modes.append((op, ops[0], ops[1], ops[2:]))
            elif op == OP_CAPABILITY:
                self.capabilities.append(ops[0])
            elif op == OP_DECORATE:
                self.decorations.setdefault(ops[0], []).append((ops[1], ops[2:]))
            elif op == OP_MEMBER_DECORATE:
                self.member_decorations.setdefault((ops[0], ops[1]), []).append((ops[2], ops[3:]))
            elif op == OP_TYPE_VOID:
                self.types[ops[0]] = ("void",)
            elif op == OP_TYPE_BOOL:
                self.types[ops[0]] = ("bool",)
            elif op == OP_TYPE_INT:
                self.types[ops[0]] = ("int", ops[1], ops[2])
            elif op == OP_TYPE_FLOAT:
                self.types[ops[0]] = ("float", ops[1])
            elif op == OP_TYPE_VECTOR:
                self.types[ops[0]] = ("vector", ops[1], ops[2])
            elif op == OP_TYPE_MATRIX:
                self.types[ops[0]] = ("matrix", ops[1], ops[2])
            elif op == OP_TYPE_IMAGE:
                # result, sampled type, dim, depth, arrayed, ms, sampled, format
                self.types[ops[0]] = ("image", ops[1], ops[2], ops[3], ops[4], ops[5], ops[6], ops[7])
            elif op == OP_TYPE_SAMPLER:
                self.types[ops[0]] = ("sampler",)
            elif op == OP_TYPE_SAMPLED_IMAGE:
                self.types[ops[0]] = ("sampled_image", ops[1])
            elif op == OP_TYPE_ARRAY:
                self.types[ops[0]] = ("array", ops[1], ops[2])
            elif op == OP_TYPE_RUNTIME_ARRAY:
                self.types[ops[0]] = ("runtime_array", ops[1])
            elif op == OP_TYPE_STRUCT:
                self.types[ops[0]] = ("struct", list(ops[1:]))
            elif op == OP_TYPE_POINTER:
                self.types[ops[0]] = ("pointer", ops[1], ops[2])
            elif op in (OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_CONSTANT, OP_CONSTANT_COMPOSITE,
                        OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE, OP_SPEC_CONSTANT,
                        OP_SPEC_CONSTANT_COMPOSITE, OP_SPEC_CONSTANT_OP):
                self.constants[ops[1]] = (op, ops[0], list(ops[2:]))
            elif op == OP_VARIABLE:
                self.variables.append((ops[1], ops[0], ops[2]))

    def decoration(self, target, dec):
        for d, operands in self.decorations.get(target, []):
            if d == dec:
                return operands
        return None

    def member_decoration(self, struct_id, member, dec):
        for d, operands in self.member_decorations.get((struct_id, member), []):
            if d == dec:
                return operands
        return None

    def name(self, target):
        return self.names.get(target, "")


def _scalar_size(mod, tid):
    t = mod.types.get(tid)
    if t is None:
        raise ShaderGenError(f"unknown type %{tid}")
    if t[0] in ("int", "float"):
        return t[1] // 8
    raise ShaderGenError(f"unsupported component type {t[0]} in a push-constant block")


def _constant_uint(mod, cid, what):
    c = mod.constants.get(cid)
    if c is None or c[0] != OP_CONSTANT:
        raise ShaderGenError(f"{what} must be a plain constant (not a specialization constant)")
    return c[2][0]


def _type_size(mod, tid, member_ctx, path):
    """Byte size of a type in an explicitly laid out block."""
    t = mod.types.get(tid)
    if t is None:
        raise ShaderGenError(f"push constant '{path}': unknown type %{tid}")
    kind = t[0]
    if kind in ("int", "float"):
        return t[1] // 8
    if kind == "vector":
        return t[2] * _scalar_size(mod, t[1])
    if kind == "matrix":
        stride = mod.member_decoration(*member_ctx, DEC_MATRIX_STRIDE) if member_ctx else None
        if not stride:
            raise ShaderGenError(f"push constant '{path}': matrix without MatrixStride")
        col = mod.types[t[1]]
        row_major = mod.member_decoration(*member_ctx, DEC_ROW_MAJOR) is not None
        vectors = col[2] if row_major else t[2]
        return stride[0] * vectors
    if kind == "array":
        length = _constant_uint(mod, t[2], f"push constant '{path}': array length")
        stride = mod.decoration(tid, DEC_ARRAY_STRIDE)
        if not stride:
            raise ShaderGenError(f"push constant '{path}': array without ArrayStride")
        return length * stride[0]
    if kind == "struct":
        return _struct_size(mod, tid, path)
    if kind == "pointer" and t[1] == SC_PHYSICAL_STORAGE_BUFFER:
        return 8
    if kind == "runtime_array":
        raise ShaderGenError(f"push constant '{path}': runtime-sized arrays are not allowed")
    if kind == "bool":
        raise ShaderGenError(f"push constant '{path}': bool has no defined size in a block")
    raise ShaderGenError(f"push constant '{path}': unsupported member type {kind}")


def _struct_size(mod, sid, path):
    members = mod.types[sid][1]
    size = 0
    for m, mtid in enumerate(members):
        mpath = f"{path}.{mod.member_names.get((sid, m)) or m}"
        offset = mod.member_decoration(sid, m, DEC_OFFSET)
        if offset is None:
            raise ShaderGenError(f"push constant '{mpath}': member without Offset decoration")
        size = max(size, offset[0] + _type_size(mod, mtid, (sid, m), mpath))
    return size


# The postfix program of a shared size (C++: SharedSizeOp): push a constant, push a
# specialization constant's value (by constant_id; 0-2 the local size), or combine the top two.
SHARED_OPS = ("Const", "Spec", "Add", "Sub", "Mul", "Div", "Shl", "Shr")
# OpSpecConstantOp opcodes a shared array's length may use, and their program op.
_SPEC_OP_CODES = {128: "Add", 130: "Sub", 132: "Mul", 134: "Div", 135: "Div", 194: "Shr",
                  195: "Shr", 196: "Shl"}


def _length_program(mod, cid, path):
    """Postfix program of an array length: a constant, a specialization constant or an
    OpSpecConstantOp expression of them. Raises ShaderGenError for anything else."""
    c = mod.constants.get(cid)
    if c is None:
        raise ShaderGenError(f"shared '{path}': array length %{cid} is not a constant")
    op, _, operands = c
    if op == OP_CONSTANT:
        return [("Const", operands[0])]
    if op == OP_SPEC_CONSTANT:
        sid = mod.decoration(cid, DEC_SPEC_ID)
        if sid is None:
            return [("Const", operands[0])]  # cannot be specialized: its default
        return [("Spec", sid[0])]
    if op == OP_SPEC_CONSTANT_OP:
        opcode, args = operands[0], operands[1:]
        if opcode in (113, 114) and len(args) == 1:  # UConvert, SConvert: the value
            return _length_program(mod, args[0], path)
        if opcode not in _SPEC_OP_CODES or len(args) != 2:
            raise ShaderGenError(
                f"shared '{path}': array length uses OpSpecConstantOp opcode {opcode}, which the "
                "shared-memory reflection does not evaluate (add it to _SPEC_OP_CODES)")
        return (_length_program(mod, args[0], path) + _length_program(mod, args[1], path) +
                [(_SPEC_OP_CODES[opcode], 0)])
    raise ShaderGenError(f"shared '{path}': unsupported array length (opcode {op})")


def _shared_size(mod, tid, path):
    """(fixed bytes, postfix program or None) of a Workgroup variable's type: natural sizes
    (no layout decorations in Workgroup memory), as the validation layer counts them."""
    t = mod.types.get(tid)
    if t is None:
        raise ShaderGenError(f"shared '{path}': unknown type %{tid}")
    kind = t[0]
    if kind in ("int", "float"):
        return t[1] // 8, None
    if kind == "bool":
        return 4, None
    if kind in ("vector", "matrix"):  # t[2] components (vector) or columns (matrix) of t[1]
        return t[2] * _shared_size(mod, t[1], path)[0], None
    if kind == "struct":
        total, program = 0, []
        for m, mtid in enumerate(t[1]):
            fixed, part = _shared_size(mod, mtid, f"{path}.{m}")
            total += fixed
            if part:
                program += part + ([("Add", 0)] if program else [])
        return total, program or None
    if kind == "array":
        elem_fixed, elem_program = _shared_size(mod, t[1], path)
        if elem_program:
            raise ShaderGenError(f"shared '{path}': arrays of specialized arrays are not reflected")
        length = _length_program(mod, t[2], path)
        if len(length) == 1 and length[0][0] == "Const":
            return elem_fixed * length[0][1], None
        return 0, length + [("Const", elem_fixed), ("Mul", 0)]
    raise ShaderGenError(f"shared '{path}': unsupported type {kind} in shared memory")


def _unwrap_pointer(mod, ptr_tid):
    t = mod.types.get(ptr_tid)
    if not t or t[0] != "pointer":
        raise ShaderGenError(f"variable type %{ptr_tid} is not a pointer")
    return t[2]


def _descriptor_kind(mod, var_id, storage_class, pointee, label):
    t = mod.types.get(pointee)
    if t is None:
        raise ShaderGenError(f"{label}: unknown type %{pointee}")
    if t[0] in ("array", "runtime_array"):
        raise ShaderGenError(
            f"{label}: arrays of descriptors are not allowed; declare one binding per resource")
    if storage_class == SC_STORAGE_BUFFER:
        return DESC_STORAGE_BUFFER
    if storage_class == SC_UNIFORM:
        if t[0] == "struct" and mod.decoration(pointee, DEC_BUFFER_BLOCK) is not None:
            return DESC_STORAGE_BUFFER
        if t[0] == "struct" and mod.decoration(pointee, DEC_BLOCK) is not None:
            return DESC_UNIFORM_BUFFER
        raise ShaderGenError(f"{label}: Uniform variable that is neither Block nor BufferBlock")
    # UniformConstant
    if t[0] == "sampled_image":
        image = mod.types.get(t[1])
        if image and image[2] == 5:  # Dim Buffer
            raise ShaderGenError(f"{label}: uniform texel buffers (samplerBuffer) are not supported")
        return DESC_COMBINED_IMAGE_SAMPLER
    if t[0] == "image":
        dim, sampled = t[2], t[6]
        if dim == 5:
            raise ShaderGenError(
                f"{label}: texel buffers (imageBuffer/textureBuffer) are not supported")
        if sampled == 2:
            return DESC_STORAGE_IMAGE
        raise ShaderGenError(
            f"{label}: separate sampled images (texture*) are not supported; use a combined sampler*")
    if t[0] == "sampler":
        raise ShaderGenError(f"{label}: separate samplers are not supported; use a combined sampler*")
    raise ShaderGenError(f"{label}: unsupported descriptor type {t[0]}")


def _may_write(mod, var_id, kind, pointee):
    """Whether the shader may write the resource behind `var_id`. The runtime records a barrier
    between two dispatches only where one writes memory the other touches, so this must never
    say no for a resource the shader can write: only what the SPIR-V declares NonWritable (GLSL
    `readonly`) counts as read-only, besides uniform buffers and samplers."""
    if kind in (DESC_UNIFORM_BUFFER, DESC_COMBINED_IMAGE_SAMPLER):
        return False
    if mod.decoration(var_id, DEC_NON_WRITABLE) is not None:
        return False
    if kind == DESC_STORAGE_IMAGE:
        return True
    # A storage buffer: glslang decorates every member of a `readonly buffer X { ... }` block.
    members = mod.types[pointee][1]
    return not members or not all(
        mod.member_decoration(pointee, m, DEC_NON_WRITABLE) is not None
        for m in range(len(members)))


def _spec_type(mod, type_id, label):
    t = mod.types.get(type_id)
    if t == ("bool",):
        return "Bool"
    if t and t[0] == "int" and t[1] == 32:
        return "Int" if t[2] else "UInt"
    if t and t[0] == "float" and t[1] == 32:
        return "Float"
    raise ShaderGenError(f"{label}: specialization constants must be 32-bit int/uint/float or bool")


def reflect(spv_bytes):
    """Reflects one compute shader and checks the conventions. Raises ShaderGenError."""
    try:
        mod = SpirvModule(spv_bytes)
    except ValueError as e:
        raise ShaderGenError(f"cannot parse SPIR-V: {e}")
    r = Reflection()

    compute = [ep for ep in mod.entry_points if ep[0] == EXEC_MODEL_GLCOMPUTE]
    if len(mod.entry_points) != 1 or len(compute) != 1:
        raise ShaderGenError("expected exactly one GLCompute entry point")
    entry = compute[0][1]

    # Capabilities -> requirement bits.
    unknown = []
    for cap in mod.capabilities:
        info = CAPABILITIES.get(cap)
        if info is None:
            unknown.append(str(cap))
            continue
        r.capabilities.append(info[0])
        if info[1]:
            r.requirements |= REQ_BIT[info[1]]
    if unknown:
        raise ShaderGenError(
            f"OpCapability {', '.join(unknown)} (numeric, see spirv-dis) is not known to the "
            "shader registry: map it to a "
            "Requirement bit (or mark it as needing no feature) in CAPABILITIES in "
            "tools/shadergen/gen_shader_registry.py so the runtime can check device support")

    # Descriptor bindings.
    found = {}
    for var_id, ptr_tid, sc in mod.variables:
        if sc not in (SC_UNIFORM_CONSTANT, SC_UNIFORM, SC_STORAGE_BUFFER):
            continue
        name = mod.name(var_id) or mod.name(_unwrap_pointer(mod, ptr_tid)) or f"%{var_id}"
        label = f"resource '{name}' ({STORAGE_CLASS_NAMES[sc]})"
        binding = mod.decoration(var_id, DEC_BINDING)
        dset = mod.decoration(var_id, DEC_DESCRIPTOR_SET)
        if binding is None or dset is None:
            raise ShaderGenError(f"{label}: missing set/binding decoration")
        label = f"{label} at set {dset[0]} binding {binding[0]}"
        if dset[0] != 0:
            raise ShaderGenError(f"{label}: all descriptors must be in set 0")
        pointee = _unwrap_pointer(mod, ptr_tid)
        kind = _descriptor_kind(mod, var_id, sc, pointee, label)
        writable = _may_write(mod, var_id, kind, pointee)
        if binding[0] in found:
            # Two views of one storage buffer (e.g. float[] and vec4[]) are allowed: the
            # descriptor is the same, written if either view may write it. Anything else
            # sharing a binding is a mistake.
            if found[binding[0]][0] == kind == "StorageBuffer":
                first_kind, first_name, first_writable = found[binding[0]]
                found[binding[0]] = (first_kind, first_name, first_writable or writable)
                continue
            raise ShaderGenError(
                f"{label}: binding {binding[0]} already used by '{found[binding[0]][1]}'")
        found[binding[0]] = (kind, name, writable)
    if found:
        expected = list(range(len(found)))
        if sorted(found) != expected:
            missing = sorted(set(range(max(found) + 1)) - set(found))
            raise ShaderGenError(
                f"descriptor bindings must be dense from 0; used {sorted(found)}, "
                f"missing {missing}")
        if len(expected) > MAX_BINDINGS:
            raise ShaderGenError(
                f"{len(expected)} descriptor bindings; at most {MAX_BINDINGS} fit "
                "ShaderInfo::writable_bindings")
        r.bindings = [found[b][0] for b in expected]
        r.binding_names = [found[b][1] for b in expected]
        r.binding_writable = [found[b][2] for b in expected]

    # Push constants.
    pcs = [(v, t) for v, t, sc in mod.variables if sc == SC_PUSH_CONSTANT]
    if len(pcs) > 1:
        raise ShaderGenError("more than one push-constant block")
    if pcs:
        var_id, ptr_tid = pcs[0]
        block = _unwrap_pointer(mod, ptr_tid)
        if mod.types.get(block, ("",))[0] != "struct":
            raise ShaderGenError("push-constant variable is not a block")
        r.push_constant_bytes = _struct_size(mod, block, mod.name(var_id) or mod.name(block) or "pc")
        if r.push_constant_bytes > MAX_PUSH_CONSTANT_BYTES:
            raise ShaderGenError(
                f"push-constant block is {r.push_constant_bytes} bytes; "
                f"the limit is {MAX_PUSH_CONSTANT_BYTES}")

    # Shared memory.
    for var_id, ptr_tid, sc in mod.variables:
        if sc != SC_WORKGROUP:
            continue
        name = mod.name(var_id) or f"%{var_id}"
        fixed, program = _shared_size(mod, _unwrap_pointer(mod, ptr_tid), name)
        r.shared_bytes += fixed
        if program:
            r.shared_program += program + ([("Add", 0)] if r.shared_program else [])

    # Specialization constants.
    spec = {}  # const id -> (spec id, type, name)
    by_spec_id = {}
    for cid, (op, type_id, _) in mod.constants.items():
        if op not in (OP_SPEC_CONSTANT, OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE):
            continue
        sid = mod.decoration(cid, DEC_SPEC_ID)
        if sid is None:
            continue  # a spec constant without SpecId cannot be specialized
        name = mod.name(cid)
        label = f"specialization constant '{name or '%' + str(cid)}' (constant_id = {sid[0]})"
        if sid[0] in by_spec_id:
            hint = (" (ids 0-2 are reserved for local_size_x_id/local_size_y_id/local_size_z_id)"
                    if sid[0] in LOCAL_SIZE_SPEC_IDS else "")
            raise ShaderGenError(f"{label}: constant_id {sid[0]} is declared twice{hint}")
        by_spec_id[sid[0]] = cid
        spec[cid] = (sid[0], _spec_type(mod, type_id, label), name)

    # Local size.
    local_size_ids = set()
    wg = [tid for tid, decs in mod.decorations.items()
          if (DEC_BUILTIN, [BUILTIN_WORKGROUP_SIZE]) in decs]
    wg_constituents = None
    if wg:
        c = mod.constants.get(wg[0])
        if c is None or c[0] not in (OP_CONSTANT_COMPOSITE, OP_SPEC_CONSTANT_COMPOSITE):
            raise ShaderGenError("the WorkgroupSize builtin is not a constant composite")
        wg_constituents = c[2]
    else:
        for op, ep, mode, operands in mod.execution_modes:
            if ep == entry and op == OP_EXECUTION_MODE_ID and mode == EXEC_MODE_LOCAL_SIZE_ID:
                wg_constituents = operands[:3]
    if wg_constituents is not None:
        spec_ids = [spec[c][0] if c in spec else None for c in wg_constituents]
        if all(s is not None for s in spec_ids):
            if tuple(spec_ids) != LOCAL_SIZE_SPEC_IDS:
                raise ShaderGenError(
                    f"local size comes from specialization constants {spec_ids}; the convention is "
                    "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;")
            r.local_size_from_spec = True
            local_size_ids = set(wg_constituents)
        elif any(s is not None for s in spec_ids):
            raise ShaderGenError(
                "local size is partly specialized; use either fixed local_size_x/y/z or all of "
                "local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2")
        else:
            r.fixed_local_size = tuple(
                _constant_uint(mod, c, "workgroup size component") for c in wg_constituents)
    else:
        for op, ep, mode, operands in mod.execution_modes:
            if ep == entry and op == OP_EXECUTION_MODE and mode == EXEC_MODE_LOCAL_SIZE:
                r.fixed_local_size = tuple(operands[:3])
        if r.fixed_local_size == (0, 0, 0):
            raise ShaderGenError("no local size declared (layout(local_size_x = ...) in;)")

    for cid, (sid, stype, name) in sorted(spec.items(), key=lambda kv: kv[1][0]):
        if cid in local_size_ids:
            continue
        if sid in LOCAL_SIZE_SPEC_IDS:
            raise ShaderGenError(
                f"specialization constant '{name or '%' + str(cid)}' uses constant_id = {sid}; "
                "ids 0-2 are reserved for local_size_x_id/local_size_y_id/local_size_z_id, "
                "use ids >= 3 for the op's own constants")
        r.spec_constants.append((sid, stype, name))
    return r


# ---------------------------------------------------------------------------
# C++ emission
# ---------------------------------------------------------------------------

def _cpp_string(s):
    out = []
    for ch in s:
        if ch in "\\\"":
            out.append("\\" + ch)
        elif 0x20 <= ord(ch) < 0x7F and ch != "?":
            out.append(ch)
        else:
            for b in ch.encode("utf-8"):
                out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def emit_header(families, manifest_rel):
    variants = [v for f in families for v in f.variants]
    L = []
    L.append(f"// Generated by tools/shadergen/gen_shader_registry.py from {manifest_rel}.")
    L.append("// Do not edit: change the shaders or their variant files and rebuild.")
    L.append("#pragma once")
    L.append("")
    L.append("#include <cstddef>")
    L.append("#include <cstdint>")
    L.append("")
    L.append("namespace vkd::shaders {")
    L.append("")
    L.append("enum class DescriptorKind : uint8_t { StorageBuffer, UniformBuffer, StorageImage, "
             "CombinedImageSampler };")
    L.append("enum class SpecConstType : uint8_t { Int, UInt, Float, Bool };")
    L.append("")
    L.append("struct SpecConstantInfo {")
    L.append("  uint32_t id;")
    L.append("  SpecConstType type;")
    L.append("  const char* name;  // from OpName; \"\" when the shader has none")
    L.append("};")
    L.append("")
    L.append("// Device features a kernel needs, from its OpCapability list.")
    L.append("enum Requirement : uint32_t {")
    for i, (cpp, _) in enumerate(REQUIREMENTS):
        L.append(f"  {cpp} = 1u << {i},")
    L.append("};")
    L.append("")
    L.append("// One step of a shared-memory size program (postfix, evaluated with the pipeline's")
    L.append("// specialization values: runtime/vk/KernelLimits.h).")
    L.append("enum class SharedSizeOpKind : uint8_t { " +
             ", ".join(f"k{o}" for o in SHARED_OPS) + " };")
    L.append("struct SharedSizeOp {")
    L.append("  SharedSizeOpKind kind;")
    L.append("  uint32_t value;  // kConst: the constant; kSpec: the constant_id (0-2: local size)")
    L.append("};")
    L.append("")
    L.append("struct ShaderInfo {")
    L.append("  const char* name;")
    L.append("  const uint32_t* spirv;")
    L.append("  size_t spirv_words;")
    L.append("  const DescriptorKind* bindings;  // binding i (set 0) for i < binding_count")
    L.append("  uint32_t binding_count;")
    L.append("  uint32_t push_constant_bytes;    // 0 when there is no push-constant block")
    L.append("  const SpecConstantInfo* spec_constants;  // sorted by id; excludes ids 0-2 "
             "used for local size")
    L.append("  uint32_t spec_constant_count;")
    L.append("  bool local_size_from_spec;       // local size = spec constants 0, 1, 2")
    L.append("  uint32_t fixed_local_size[3];    // valid when !local_size_from_spec")
    L.append("  uint32_t requirements;           // Requirement bits")
    L.append("  // Bit i set: the kernel may write binding i. Clear only where the SPIR-V says")
    L.append("  // NonWritable (GLSL `readonly`) or for a uniform buffer or sampler: the graph")
    L.append("  // records a barrier between dispatches only where one writes what another uses.")
    L.append("  uint32_t writable_bindings;")
    L.append("  // Workgroup memory: the bytes of constant size, plus the value of the program (its")
    L.append("  // arrays sized by specialization constants) where there is one.")
    L.append("  uint32_t shared_bytes;")
    L.append("  const SharedSizeOp* shared_program;")
    L.append("  uint32_t shared_program_length;")
    L.append("};")
    L.append("")
    L.append("inline bool writes_binding(const ShaderInfo& info, uint32_t binding) {")
    L.append(f"  return binding < {MAX_BINDINGS} && "
             "((info.writable_bindings >> binding) & 1u) != 0;")
    L.append("}")
    L.append("")
    L.append("// One kernel per shader variant, in variant-file order.")
    L.append("enum class Kernel : uint16_t {")
    for v in variants:
        comment = " ".join(f"{k}={val}" for k, val in v.defines)
        L.append(f"  {v.name},{'  // ' + comment if comment else ''}")
    L.append("};")
    L.append(f"inline constexpr size_t kKernelCount = {len(variants)};")
    L.append("")
    L.append("const ShaderInfo& shader_info(Kernel kernel);")
    L.append("")
    L.append("// Variant tables: variants::<family>[axis 0 value][axis 1 value]..., indexed by")
    L.append("// the position of each axis value in its variant file.")
    L.append("namespace variants {")
    for f in families:
        if not f.axes:
            continue
        dims = "".join(f"[{len(vals)}]" for _, vals in f.axes)
        for define, vals in f.axes:
            L.append(f"// {f.name}: {define} = " + ", ".join(
                f"{i}: {s}" for i, (s, _) in enumerate(vals)))
        it = iter(f.variants)

        def nest(level, indent):
            if level == len(f.axes):
                return f"Kernel::{next(it).name}"
            n = len(f.axes[level][1])
            items = [nest(level + 1, indent + "  ") for _ in range(n)]
            if level == len(f.axes) - 1:
                return "{" + ", ".join(items) + "}"
            inner = (",\n" + indent + "  ").join(items)
            return "{\n" + indent + "  " + inner + "}"

        L.append(f"inline constexpr Kernel {f.name}{dims} = {nest(0, '')};")
    L.append("}  // namespace variants")
    L.append("")
    L.append("}  // namespace vkd::shaders")
    return "\n".join(L) + "\n"


def emit_cpp(families, reflections, spirvs, manifest_rel):
    variants = [v for f in families for v in f.variants]
    L = []
    L.append(f"// Generated by tools/shadergen/gen_shader_registry.py from {manifest_rel}.")
    L.append("// Do not edit.")
    L.append('#include "vkd/generated/ShaderRegistry.h"')
    L.append("")
    L.append("namespace vkd::shaders {")
    L.append("namespace {")
    for v in variants:
        r = reflections[v.name]
        words = struct.unpack(f"<{len(spirvs[v.name]) // 4}I", spirvs[v.name])
        L.append("")
        desc = " ".join(f"{k}={val}" for k, val in v.defines)
        L.append(f"// {v.name}{': ' + desc if desc else ''}")
        L.append(f"const uint32_t kSpirv_{v.name}[{len(words)}] = {{")
        for i in range(0, len(words), 8):
            L.append("    " + ", ".join(f"0x{w:08x}u" for w in words[i:i + 8]) + ",")
        L.append("};")
        if r.bindings:
            L.append(f"const DescriptorKind kBindings_{v.name}[{len(r.bindings)}] = {{"
                     + ", ".join(f"DescriptorKind::{k}" for k in r.bindings) + "};")
        if r.spec_constants:
            L.append(f"const SpecConstantInfo kSpec_{v.name}[{len(r.spec_constants)}] = {{")
            for sid, stype, name in r.spec_constants:
                L.append(f"    {{{sid}u, SpecConstType::{stype}, {_cpp_string(name)}}},")
            L.append("};")
        if r.shared_program:
            L.append(f"const SharedSizeOp kShared_{v.name}[{len(r.shared_program)}] = {{")
            for op, value in r.shared_program:
                L.append(f"    {{SharedSizeOpKind::k{op}, {value}u}},")
            L.append("};")
    L.append("")
    L.append("const ShaderInfo kShaderInfos[kKernelCount] = {")
    for v in variants:
        r = reflections[v.name]
        words = len(spirvs[v.name]) // 4
        reqs = [cpp for cpp, _ in REQUIREMENTS if r.requirements & REQ_BIT[cpp]]
        req_expr = " | ".join(f"uint32_t{{{c}}}" for c in reqs) if reqs else "0u"
        bindings = f"kBindings_{v.name}" if r.bindings else "nullptr"
        spec = f"kSpec_{v.name}" if r.spec_constants else "nullptr"
        ls = ", ".join(f"{x}u" for x in r.fixed_local_size)
        L.append(f"    {{{_cpp_string(v.name)}, kSpirv_{v.name}, {words}u,")
        L.append(f"     {bindings}, {len(r.bindings)}u, {r.push_constant_bytes}u,")
        L.append(f"     {spec}, {len(r.spec_constants)}u,")
        L.append(f"     {'true' if r.local_size_from_spec else 'false'}, {{{ls}}},")
        shared = f"kShared_{v.name}" if r.shared_program else "nullptr"
        L.append(f"     {req_expr}, 0x{r.writable_mask():x}u,")
        L.append(f"     {r.shared_bytes}u, {shared}, {len(r.shared_program)}u}},")
    L.append("};")
    L.append("")
    L.append("}  // namespace")
    L.append("")
    L.append("const ShaderInfo& shader_info(Kernel kernel) {")
    L.append("  return kShaderInfos[static_cast<size_t>(kernel)];")
    L.append("}")
    L.append("")
    L.append("}  // namespace vkd::shaders")
    return "\n".join(L) + "\n"


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def run(args):
    source_dir = os.path.abspath(args.source_dir)
    include_dirs, families = load_shader_variants(source_dir, args.include_dir)
    variants = [v for f in families for v in f.variants]

    compiler = Compiler(args.glslang, args.spirv_val, include_dirs,
                        os.path.abspath(args.cache_dir), source_dir)
    jobs = args.jobs or os.cpu_count() or 1

    spirvs, errors, compiled = {}, [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(compiler.compile, v): v for v in variants}
        for fut in concurrent.futures.as_completed(futures):
            v = futures[fut]
            try:
                spv, did_compile = fut.result()
                spirvs[v.name] = spv
                if did_compile:
                    compiled.append(v.name)
            except ShaderGenError as e:
                errors.append((variants.index(v), str(e)))

    reflections = {}
    for v in variants:
        if v.name not in spirvs:
            continue
        try:
            reflections[v.name] = reflect(spirvs[v.name])
        except ShaderGenError as e:
            errors.append((variants.index(v), f"{compiler._describe(v)}\n  convention check "
                                              f"failed: {e}"))
    if errors:
        errors.sort()
        shown = errors[:MAX_DETAILED_ERRORS]
        msg = "\n".join(f"vkd shadergen: error: {text}" for _, text in shown)
        if len(errors) > len(shown):
            rest = ", ".join(variants[i].name for i, _ in errors[len(shown):])
            msg += f"\nvkd shadergen: error: also failed (details omitted): {rest}"
        raise ShaderGenError(
            f"{msg}\nvkd shadergen: {len(errors)} of {len(variants)} shader variant(s) failed")

    compiler.prune([v.name for v in variants])

    manifest_rel = f"{os.path.basename(source_dir)}/*{VARIANTS_SUFFIX}"
    changed = []
    if write_if_changed(args.out_header, emit_header(families, manifest_rel)):
        changed.append("header")
    if write_if_changed(args.out_cpp, emit_cpp(families, reflections, spirvs, manifest_rel)):
        changed.append("source")
    if args.reflection_json:
        dump = {v.name: dict(family=v.family, defines=dict(v.defines),
                             spirv_words=len(spirvs[v.name]) // 4,
                             **reflections[v.name].to_json()) for v in variants}
        write_if_changed(args.reflection_json, json.dumps(dump, indent=1) + "\n")
    if args.stamp:
        os.makedirs(os.path.dirname(os.path.abspath(args.stamp)), exist_ok=True)
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write("\n".join(sorted(compiled)) + "\n")

    print(f"vkd shadergen: {len(variants)} variants in {len(families)} families: "
          f"{len(compiled)} compiled, {len(variants) - len(compiled)} cached; "
          f"registry {'updated (' + ', '.join(changed) + ')' if changed else 'unchanged'}")
    if args.verbose and compiled:
        print("vkd shadergen: compiled " + ", ".join(sorted(compiled)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source-dir", required=True,
                   help="the shader dir: <name>.glsl with <name>.variants.json beside each")
    p.add_argument("--include-dir", action="append", default=[],
                   help="#include search dir, relative to the shader dir (repeatable)")
    p.add_argument("--out-header", required=True, help=".../vkd/generated/ShaderRegistry.h")
    p.add_argument("--out-cpp", required=True, help=".../ShaderRegistry.cpp")
    p.add_argument("--cache-dir", required=True, help="per-variant SPIR-V cache (in the build dir)")
    p.add_argument("--glslang", default="glslangValidator")
    p.add_argument("--spirv-val", default="spirv-val")
    p.add_argument("--jobs", type=int, default=0, help="parallel compiles (default: os.cpu_count())")
    p.add_argument("--stamp", help="file touched on every successful run (lists compiled variants)")
    p.add_argument("--reflection-json", help="optional JSON dump of the reflected data")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    try:
        run(args)
    except ShaderGenError as e:
        text = str(e)
        if not text.startswith("vkd shadergen:"):
            text = f"vkd shadergen: error: {text}"
        print(text, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
