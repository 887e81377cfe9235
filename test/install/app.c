/* A plain C99 app built against the INSTALLED vkdelegate package (find_package and pkg-config
 * variants, test/install/run_install_test.sh). It uses only <vkdelegate/vkd_delegate.h>.
 *
 * usage: vkd_install_app MODEL.vkd [INPUT.bin|-] [EXPECTED.bin]
 *   INPUT.bin     raw little-endian host data of every input, concatenated ("-" or absent: a
 *                 deterministic formula)
 *   EXPECTED.bin  raw host data of every output, concatenated; compared exactly
 *
 * Runs the model once, prints inputs/outputs/profile, then exercises the error paths of the C
 * API. VKD_VALIDATION=1 in the environment turns the validation layer on (options.validation).
 * Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vkdelegate/vkd_delegate.h>

static int g_failures = 0;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      ++g_failures;                                          \
      fprintf(stderr, "CHECK FAILED (line %d): ", __LINE__); \
      fprintf(stderr, __VA_ARGS__);                          \
      fputc('\n', stderr);                                   \
    }                                                        \
  } while (0)

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  unsigned char* data = NULL;
  long end;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  data = (unsigned char*)malloc(end > 0 ? (size_t)end : 1);
  if (data != NULL && fread(data, 1, (size_t)end, f) != (size_t)end) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = (size_t)end;
  return data;
}

static const char* dtype_name(vkd_dtype dtype) {
  switch (dtype) {
    case VKD_FLOAT32: return "float32";
    case VKD_INT32: return "int32";
    case VKD_INT8: return "int8";
  }
  return "?";
}

/* Out-structs carry their size (ABI rule): zero them and set struct_size. */
static vkd_tensor_info new_info(void) {
  vkd_tensor_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  return info;
}

static vkd_node_profile new_profile_entry(void) {
  vkd_node_profile entry;
  memset(&entry, 0, sizeof(entry));
  entry.struct_size = sizeof(entry);
  return entry;
}

static void print_info(const char* kind, size_t index, const vkd_tensor_info* info) {
  uint32_t d;
  printf("%s %u: name '%s' sizes [", kind, (unsigned)index, info->name);
  for (d = 0; d < info->rank; ++d) printf(d ? ",%lld" : "%lld", (long long)info->sizes[d]);
  printf("] host %s, %lu bytes; device %s %s\n", dtype_name(info->dtype),
         (unsigned long)info->bytes, info->device_dtype, info->layout);
}

static size_t elem_size(vkd_dtype dtype) { return dtype == VKD_INT8 ? 1 : 4; }

/* Deterministic input when no file is given. */
static void fill_formula(const vkd_tensor_info* info, void* data) {
  size_t n = info->bytes / elem_size(info->dtype), i;
  for (i = 0; i < n; ++i) {
    if (info->dtype == VKD_FLOAT32) {
      ((float*)data)[i] = (float)((long)((i * 37) % 257) - 128) * 0.03125f;
    } else if (info->dtype == VKD_INT32) {
      ((int32_t*)data)[i] = (int32_t)(i % 1000) - 500;
    } else {
      ((int8_t*)data)[i] = (int8_t)((int)((i * 7) % 256) - 128);
    }
  }
}

static void to_tensor(const vkd_tensor_info* info, void* data, vkd_tensor* t) {
  uint32_t d;
  memset(t, 0, sizeof(*t));
  t->data = data;
  t->bytes = info->bytes;
  t->dtype = info->dtype;
  t->rank = info->rank;
  for (d = 0; d < info->rank; ++d) t->sizes[d] = info->sizes[d];
}

/* Compares outputs with `expected` (all outputs concatenated); returns the mismatch count. */
static size_t compare_outputs(vkd_delegate* h, void** out_data, const unsigned char* expected,
                              size_t expected_size) {
  size_t count = vkd_delegate_output_count(h), o, offset = 0, mismatches = 0;
  for (o = 0; o < count; ++o) {
    vkd_tensor_info info = new_info();
    size_t n, i;
    double max_err = 0.0;
    if (vkd_delegate_output_info(h, o, &info) != VKD_OK) return (size_t)-1;
    if (offset + info.bytes > expected_size) {
      fprintf(stderr, "expected file has %lu bytes, outputs need more\n",
              (unsigned long)expected_size);
      return (size_t)-1;
    }
    n = info.bytes / elem_size(info.dtype);
    for (i = 0; i < n; ++i) {
      int equal;
      if (info.dtype == VKD_FLOAT32) {
        float got = ((const float*)out_data[o])[i], want;
        double err;
        memcpy(&want, expected + offset + i * 4, 4);
        equal = got == want;
        err = got > want ? (double)got - want : (double)want - got;
        if (err > max_err) max_err = err;
        if (!equal && mismatches < 5) {
          fprintf(stderr, "output %lu element %lu: got %.9g, expected %.9g\n", (unsigned long)o,
                  (unsigned long)i, got, want);
        }
      } else {
        size_t es = elem_size(info.dtype);
        equal =
            memcmp((const unsigned char*)out_data[o] + i * es, expected + offset + i * es, es) == 0;
      }
      if (!equal) ++mismatches;
    }
    printf("output %lu '%s': %lu elements, %lu mismatches, max abs error %.9g\n", (unsigned long)o,
           info.name, (unsigned long)n, (unsigned long)mismatches, max_err);
    offset += info.bytes;
  }
  if (offset != expected_size) {
    fprintf(stderr, "expected file has %lu bytes, the outputs %lu\n", (unsigned long)expected_size,
            (unsigned long)offset);
    return (size_t)-1;
  }
  return mismatches;
}

/* The C API's answers without a handle: nothing may crash. */
static void check_null_handle(void) {
  vkd_tensor_info info = new_info();
  vkd_node_profile entry = new_profile_entry();
  const char* msg = vkd_delegate_last_error(NULL);
  CHECK(vkd_delegate_input_count(NULL) == 0, "input_count(NULL) != 0");
  CHECK(vkd_delegate_output_count(NULL) == 0, "output_count(NULL) != 0");
  CHECK(vkd_delegate_input_info(NULL, 0, &info) == VKD_ERROR_INVALID_ARGUMENT,
        "input_info(NULL) is not VKD_ERROR_INVALID_ARGUMENT");
  CHECK(vkd_delegate_output_info(NULL, 0, &info) == VKD_ERROR_INVALID_ARGUMENT,
        "output_info(NULL) is not VKD_ERROR_INVALID_ARGUMENT");
  CHECK(vkd_delegate_execute(NULL, NULL, 0, NULL, 0) == VKD_ERROR_INVALID_ARGUMENT,
        "execute(NULL) is not VKD_ERROR_INVALID_ARGUMENT");
  CHECK(vkd_delegate_profile_count(NULL) == 0, "profile_count(NULL) != 0");
  CHECK(vkd_delegate_profile_entry(NULL, 0, &entry) == VKD_ERROR_INVALID_ARGUMENT,
        "profile_entry(NULL) is not VKD_ERROR_INVALID_ARGUMENT");
  CHECK(msg != NULL, "last_error(NULL) returned NULL");
  CHECK(vkd_delegate_init(NULL, 0, NULL, NULL) == VKD_ERROR_INVALID_ARGUMENT,
        "init(NULL, ..., NULL) is not VKD_ERROR_INVALID_ARGUMENT");
  vkd_delegate_destroy(NULL); /* no-op */
  vkd_options_init(NULL);     /* no-op */
  printf("null handle: ok (last_error(NULL) = \"%s\")\n", msg ? msg : "(null)");
}

static void check_bad_blobs(const unsigned char* blob, size_t size, const vkd_options* options) {
  vkd_delegate* h = (vkd_delegate*)&h; /* must be overwritten with NULL */
  vkd_options zeroed;
  vkd_status st;

  st = vkd_delegate_init(blob, size / 2, options, &h);
  printf("truncated blob (%lu of %lu bytes): %s: %s\n", (unsigned long)(size / 2),
         (unsigned long)size, vkd_status_name(st), vkd_init_error());
  CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "truncated blob gave %s", vkd_status_name(st));
  CHECK(h == NULL, "failed init left *out non-NULL");
  CHECK(vkd_init_error()[0] != '\0', "vkd_init_error() is empty after a failed init");

  st = vkd_delegate_init(blob, 16, options, &h);
  CHECK(st == VKD_ERROR_INVALID_ARGUMENT && vkd_init_error()[0] != '\0', "16-byte blob gave %s",
        vkd_status_name(st));

  memset(&zeroed, 0, sizeof(zeroed)); /* struct_size 0: vkd_options_init was not called */
  st = vkd_delegate_init(blob, size, &zeroed, &h);
  printf("options without struct_size: %s: %s\n", vkd_status_name(st), vkd_init_error());
  CHECK(st == VKD_ERROR_INVALID_ARGUMENT && h == NULL, "options with struct_size 0 gave %s",
        vkd_status_name(st));
}

/* Error paths on a live handle; it must stay usable afterwards. */
static void check_execute_errors(vkd_delegate* h, void** in_data, void** out_data) {
  vkd_tensor_info in_info = new_info(), out_info = new_info();
  vkd_tensor in, out;
  vkd_node_profile entry = new_profile_entry();
  vkd_status st;
  if (vkd_delegate_input_info(h, 0, &in_info) != VKD_OK ||
      vkd_delegate_output_info(h, 0, &out_info) != VKD_OK) {
    CHECK(0, "input/output info 0 failed: %s", vkd_delegate_last_error(h));
    return;
  }
  to_tensor(&in_info, in_data[0], &in);
  to_tensor(&out_info, out_data[0], &out);

  /* Wrong input shape: one element less in the last dim, bytes to match. */
  {
    vkd_tensor wrong = in;
    int64_t last = wrong.sizes[wrong.rank - 1];
    wrong.sizes[wrong.rank - 1] = last > 1 ? last - 1 : last + 1;
    wrong.bytes = in.bytes / (size_t)last * (size_t)wrong.sizes[wrong.rank - 1];
    st = vkd_delegate_execute(h, &wrong, 1, &out, 1);
    printf("wrong input shape: %s: %s\n", vkd_status_name(st), vkd_delegate_last_error(h));
    CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "wrong input shape gave %s", vkd_status_name(st));
    CHECK(vkd_delegate_last_error(h)[0] != '\0', "last_error empty after a failed execute");
  }
  /* Wrong byte count with the right shape. */
  {
    vkd_tensor wrong = in;
    wrong.bytes = in.bytes - 1;
    st = vkd_delegate_execute(h, &wrong, 1, &out, 1);
    printf("wrong input bytes: %s: %s\n", vkd_status_name(st), vkd_delegate_last_error(h));
    CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "wrong input bytes gave %s", vkd_status_name(st));
  }
  /* Wrong dtype. */
  {
    vkd_tensor wrong = in;
    wrong.dtype = in.dtype == VKD_INT32 ? VKD_FLOAT32 : VKD_INT32;
    st = vkd_delegate_execute(h, &wrong, 1, &out, 1);
    printf("wrong input dtype: %s: %s\n", vkd_status_name(st), vkd_delegate_last_error(h));
    CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "wrong input dtype gave %s", vkd_status_name(st));
  }
  /* A dtype none of vkd_dtype's values has (C lets an app store any int there): refused by name;
     and a status none of vkd_status's values has gets a fixed name. */
  {
    vkd_tensor wrong = in;
    wrong.dtype = (vkd_dtype)77;
    st = vkd_delegate_execute(h, &wrong, 1, &out, 1);
    printf("input dtype 77: %s: %s\n", vkd_status_name(st), vkd_delegate_last_error(h));
    CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "dtype 77 gave %s", vkd_status_name(st));
    CHECK(strstr(vkd_delegate_last_error(h), "inputs[0].dtype is 77") != NULL,
          "the message of dtype 77 does not name the field and value: %s",
          vkd_delegate_last_error(h));
    CHECK(strcmp(vkd_status_name((vkd_status)99), "VKD_ERROR_UNKNOWN_STATUS") == 0,
          "vkd_status_name(99) is %s", vkd_status_name((vkd_status)99));
  }
  /* Rank above VKD_MAX_RANK. */
  {
    vkd_tensor wrong = in;
    wrong.rank = VKD_MAX_RANK + 1;
    st = vkd_delegate_execute(h, &wrong, 1, &out, 1);
    printf("rank %d: %s: %s\n", VKD_MAX_RANK + 1, vkd_status_name(st), vkd_delegate_last_error(h));
    CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "rank 5 gave %s", vkd_status_name(st));
  }
  /* Wrong counts and NULL arrays. */
  st = vkd_delegate_execute(h, &in, 1, NULL, 1);
  CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "outputs NULL gave %s", vkd_status_name(st));
  st = vkd_delegate_execute(h, NULL, 0, &out, 1);
  printf("no inputs: %s: %s\n", vkd_status_name(st), vkd_delegate_last_error(h));
  CHECK(st == VKD_ERROR_INVALID_ARGUMENT, "0 inputs gave %s", vkd_status_name(st));
  /* Queries out of range. */
  CHECK(vkd_delegate_input_info(h, 99, &in_info) == VKD_ERROR_INVALID_ARGUMENT,
        "input_info(99) is not VKD_ERROR_INVALID_ARGUMENT");
  CHECK(vkd_delegate_output_info(h, 0, NULL) == VKD_ERROR_INVALID_ARGUMENT,
        "output_info(NULL info) is not VKD_ERROR_INVALID_ARGUMENT");
  CHECK(vkd_delegate_profile_entry(h, 1000000, &entry) == VKD_ERROR_INVALID_ARGUMENT,
        "profile_entry(1000000) is not VKD_ERROR_INVALID_ARGUMENT");

  /* The handle still works, and a good execute clears the error. */
  st = vkd_delegate_execute(h, &in, 1, &out, 1);
  CHECK(st == VKD_OK, "execute after errors gave %s: %s", vkd_status_name(st),
        vkd_delegate_last_error(h));
  CHECK(vkd_delegate_last_error(h)[0] == '\0', "last_error not cleared by a good execute: %s",
        vkd_delegate_last_error(h));
  printf("error paths: done\n");
}

int main(int argc, char** argv) {
  const char* model_path;
  const char* input_path = NULL;
  const char* expected_path = NULL;
  const char* env_validation = getenv("VKD_VALIDATION");
  unsigned char* blob;
  size_t blob_size = 0, n_in, n_out, i, profile_count;
  vkd_options options;
  vkd_delegate* h = NULL;
  vkd_status st;
  vkd_tensor* inputs;
  vkd_tensor* outputs;
  void** in_data;
  void** out_data;

  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL.vkd [INPUT.bin|-] [EXPECTED.bin]\n", argv[0]);
    return 2;
  }
  model_path = argv[1];
  if (argc >= 3 && strcmp(argv[2], "-") != 0) input_path = argv[2];
  if (argc >= 4) expected_path = argv[3];

  blob = read_file(model_path, &blob_size);
  if (blob == NULL) {
    fprintf(stderr, "cannot read %s\n", model_path);
    return 1;
  }

  check_null_handle();

  vkd_options_init(&options);
  CHECK(options.struct_size == sizeof(vkd_options), "vkd_options_init: struct_size not set");
  CHECK(options.profiling == 1, "vkd_options_init: profiling is not on by default");
  options.validation = env_validation != NULL && strcmp(env_validation, "0") != 0;
  options.profiling = 1;
  printf("validation layer: %s\n", options.validation ? "on" : "off");

  check_bad_blobs(blob, blob_size, &options);

  st = vkd_delegate_init(blob, blob_size, &options, &h);
  if (st != VKD_OK) {
    fprintf(stderr, "vkd_delegate_init: %s: %s\n", vkd_status_name(st), vkd_init_error());
    free(blob);
    return 1;
  }
  CHECK(vkd_init_error()[0] == '\0', "vkd_init_error() not empty after a good init");
  /* The blob's bytes may be freed once init returned. */
  memset(blob, 0xCD, blob_size);

  n_in = vkd_delegate_input_count(h);
  n_out = vkd_delegate_output_count(h);
  printf("model %s: %lu inputs, %lu outputs\n", model_path, (unsigned long)n_in,
         (unsigned long)n_out);
  inputs = (vkd_tensor*)calloc(n_in ? n_in : 1, sizeof(vkd_tensor));
  outputs = (vkd_tensor*)calloc(n_out ? n_out : 1, sizeof(vkd_tensor));
  in_data = (void**)calloc(n_in ? n_in : 1, sizeof(void*));
  out_data = (void**)calloc(n_out ? n_out : 1, sizeof(void*));
  if (!inputs || !outputs || !in_data || !out_data) return 1;

  {
    unsigned char* file = NULL;
    size_t file_size = 0, offset = 0;
    if (input_path != NULL) {
      file = read_file(input_path, &file_size);
      if (file == NULL) {
        fprintf(stderr, "cannot read %s\n", input_path);
        return 1;
      }
    }
    for (i = 0; i < n_in; ++i) {
      vkd_tensor_info info = new_info();
      st = vkd_delegate_input_info(h, i, &info);
      CHECK(st == VKD_OK, "input_info(%lu): %s", (unsigned long)i, vkd_delegate_last_error(h));
      if (st != VKD_OK) return 1;
      print_info("input", i, &info);
      in_data[i] = malloc(info.bytes ? info.bytes : 1);
      if (in_data[i] == NULL) return 1;
      if (file != NULL) {
        CHECK(offset + info.bytes <= file_size, "%s is too short", input_path);
        if (offset + info.bytes > file_size) return 1;
        memcpy(in_data[i], file + offset, info.bytes);
        offset += info.bytes;
      } else {
        fill_formula(&info, in_data[i]);
      }
      to_tensor(&info, in_data[i], &inputs[i]);
    }
    if (file != NULL) CHECK(offset == file_size, "%s has extra bytes", input_path);
    free(file);
  }
  for (i = 0; i < n_out; ++i) {
    vkd_tensor_info info = new_info();
    st = vkd_delegate_output_info(h, i, &info);
    CHECK(st == VKD_OK, "output_info(%lu): %s", (unsigned long)i, vkd_delegate_last_error(h));
    if (st != VKD_OK) return 1;
    print_info("output", i, &info);
    out_data[i] = calloc(1, info.bytes ? info.bytes : 1);
    if (out_data[i] == NULL) return 1;
    to_tensor(&info, out_data[i], &outputs[i]);
  }

  CHECK(vkd_delegate_profile_count(h) == 0, "profile entries before the first execute");
  st = vkd_delegate_execute(h, inputs, n_in, outputs, n_out);
  if (st != VKD_OK) {
    fprintf(stderr, "vkd_delegate_execute: %s: %s\n", vkd_status_name(st),
            vkd_delegate_last_error(h));
    vkd_delegate_destroy(h);
    return 1;
  }

  for (i = 0; i < n_out; ++i) {
    size_t k, n = outputs[i].bytes / elem_size(outputs[i].dtype);
    printf("output %lu first values:", (unsigned long)i);
    for (k = 0; k < n && k < 8; ++k) {
      if (outputs[i].dtype == VKD_FLOAT32)
        printf(" %g", ((const float*)out_data[i])[k]);
      else if (outputs[i].dtype == VKD_INT32)
        printf(" %d", (int)((const int32_t*)out_data[i])[k]);
      else
        printf(" %d", (int)((const int8_t*)out_data[i])[k]);
    }
    printf("\n");
  }

  if (expected_path != NULL) {
    size_t expected_size = 0, mismatches;
    unsigned char* expected = read_file(expected_path, &expected_size);
    CHECK(expected != NULL, "cannot read %s", expected_path);
    if (expected != NULL) {
      mismatches = compare_outputs(h, out_data, expected, expected_size);
      CHECK(mismatches == 0, "outputs differ from %s (%ld mismatches)", expected_path,
            (long)mismatches);
      free(expected);
    }
  }

  profile_count = vkd_delegate_profile_count(h);
  printf("profile: %lu nodes\n", (unsigned long)profile_count);
  for (i = 0; i < profile_count; ++i) {
    vkd_node_profile entry = new_profile_entry();
    st = vkd_delegate_profile_entry(h, i, &entry);
    CHECK(st == VKD_OK, "profile_entry(%lu): %s", (unsigned long)i, vkd_delegate_last_error(h));
    if (st == VKD_OK) {
      printf("  %-18s %-40s %10.2f us  %s\n", entry.op, entry.kernel, entry.gpu_us, entry.tensors);
    }
  }
  CHECK(profile_count > 0, "no profile entries with options.profiling = 1");
  {
    /* An app built against an older header passes a smaller out-struct: only what fits is
       written, so the field after it stays untouched. */
    struct {
      vkd_node_profile entry;
      unsigned char guard[64];
    } old;
    memset(&old, 0xAB, sizeof(old));
    old.entry.struct_size = offsetof(vkd_node_profile, gpu_us);
    st = vkd_delegate_profile_entry(h, 0, &old.entry);
    CHECK(st == VKD_OK && old.entry.op != NULL && old.entry.kernel != NULL,
          "profile_entry with a smaller struct_size failed");
    CHECK(((const unsigned char*)&old.entry.gpu_us)[0] == 0xAB,
          "profile_entry wrote past the caller's struct_size");
  }
  {
    /* Where the execute's time went: the phases inside the host wall, the GPU span (profiling is
       on) covering the longest dispatch. */
    vkd_execute_profile ep;
    double longest = 0.0;
    memset(&ep, 0, sizeof(ep));
    ep.struct_size = sizeof(ep);
    st = vkd_delegate_execute_profile(h, &ep);
    CHECK(st == VKD_OK, "execute_profile: %s", vkd_delegate_last_error(h));
    for (i = 0; i < profile_count; ++i) {
      vkd_node_profile entry = new_profile_entry();
      if (vkd_delegate_profile_entry(h, i, &entry) == VKD_OK && entry.gpu_us > longest) {
        longest = entry.gpu_us;
      }
    }
    printf(
        "execute: %.1f us host wall (input copy %.1f, submit -> fence %.1f, output copy "
        "%.1f), GPU span %.2f us\n",
        ep.host_wall_us, ep.input_copy_us, ep.submit_wait_us, ep.output_copy_us, ep.gpu_span_us);
    CHECK(ep.input_copy_us >= 0.0 && ep.submit_wait_us > 0.0 && ep.output_copy_us >= 0.0 &&
              ep.input_copy_us + ep.submit_wait_us + ep.output_copy_us <= ep.host_wall_us,
          "execute_profile: host phases inconsistent with the host wall");
    CHECK(ep.gpu_span_us >= longest && ep.gpu_span_us <= ep.host_wall_us,
          "execute_profile: GPU span %.2f us outside [longest dispatch %.2f, host wall %.2f]",
          ep.gpu_span_us, longest, ep.host_wall_us);
    CHECK(ep.gpu_input_copy_us > 0.0 && ep.gpu_output_copy_us > 0.0,
          "execute_profile: staging copies not timed (in %.2f, out %.2f us)", ep.gpu_input_copy_us,
          ep.gpu_output_copy_us);
  }
  {
    /* Timestamps off for the next execute: no per-node profile, no GPU times; then back on. */
    vkd_execute_profile ep;
    st = vkd_delegate_set_profiling(h, 0);
    CHECK(st == VKD_OK, "set_profiling(0): %s", vkd_delegate_last_error(h));
    st = vkd_delegate_execute(h, inputs, n_in, outputs, n_out);
    CHECK(st == VKD_OK, "execute without profiling: %s", vkd_delegate_last_error(h));
    memset(&ep, 0, sizeof(ep));
    ep.struct_size = sizeof(ep);
    st = vkd_delegate_execute_profile(h, &ep);
    CHECK(st == VKD_OK && ep.host_wall_us > 0.0 && ep.gpu_span_us == 0.0 &&
              vkd_delegate_profile_count(h) == 0,
          "set_profiling(0): GPU times still reported (span %.2f us, %lu nodes)", ep.gpu_span_us,
          (unsigned long)vkd_delegate_profile_count(h));
    /* Span only: the GPU span and the staging copies, no per-node profile. */
    st = vkd_delegate_set_profiling(h, VKD_PROFILING_SPAN);
    CHECK(st == VKD_OK, "set_profiling(SPAN): %s", vkd_delegate_last_error(h));
    st = vkd_delegate_execute(h, inputs, n_in, outputs, n_out);
    CHECK(st == VKD_OK, "execute with the span timed: %s", vkd_delegate_last_error(h));
    memset(&ep, 0, sizeof(ep));
    ep.struct_size = sizeof(ep);
    st = vkd_delegate_execute_profile(h, &ep);
    CHECK(st == VKD_OK && ep.gpu_span_us > 0.0 && ep.gpu_span_us <= ep.host_wall_us &&
              ep.gpu_total_us == 0.0 && ep.gpu_input_copy_us > 0.0 &&
              vkd_delegate_profile_count(h) == 0,
          "set_profiling(SPAN): span %.2f us (host wall %.2f), total %.2f, copy in %.2f, %lu "
          "nodes",
          ep.gpu_span_us, ep.host_wall_us, ep.gpu_total_us, ep.gpu_input_copy_us,
          (unsigned long)vkd_delegate_profile_count(h));
    st = vkd_delegate_set_profiling(h, 3);
    CHECK(st == VKD_ERROR_INVALID_ARGUMENT && strstr(vkd_delegate_last_error(h), "mode 3") != NULL,
          "set_profiling(3) not refused: %s", vkd_delegate_last_error(h));
    st = vkd_delegate_set_profiling(h, VKD_PROFILING_NODES);
    CHECK(st == VKD_OK, "set_profiling(NODES): %s", vkd_delegate_last_error(h));
  }
  if (n_in == 1 && n_out == 1) {
    /* Zero-copy: through the staging views where the device form is contiguous NCHW, the same
       outputs as the copied run above; elsewhere a clear Unsupported. */
    vkd_tensor in_view, out_view;
    const vkd_status si = vkd_delegate_staging_input(h, 0, &in_view);
    CHECK(si == VKD_OK || (si == VKD_ERROR_UNSUPPORTED &&
                           strstr(vkd_delegate_last_error(h), "not contiguous NCHW") != NULL),
          "staging_input: %s", vkd_delegate_last_error(h));
    const vkd_status so = vkd_delegate_staging_output(h, 0, &out_view);
    CHECK(so == VKD_OK || so == VKD_ERROR_UNSUPPORTED, "staging_output: %s",
          vkd_delegate_last_error(h));
    if (si == VKD_OK && so == VKD_OK) {
      CHECK(in_view.bytes == inputs[0].bytes && out_view.bytes == outputs[0].bytes,
            "staging views of %lu / %lu bytes for tensors of %lu / %lu",
            (unsigned long)in_view.bytes, (unsigned long)out_view.bytes,
            (unsigned long)inputs[0].bytes, (unsigned long)outputs[0].bytes);
      memcpy(in_view.data, inputs[0].data, in_view.bytes);
      st = vkd_delegate_execute(h, &in_view, 1, &out_view, 1);
      CHECK(st == VKD_OK, "execute through staging views: %s", vkd_delegate_last_error(h));
      CHECK(memcmp(out_view.data, outputs[0].data, out_view.bytes) == 0,
            "outputs through the staging view differ from the copied ones");
      printf("zero-copy: staging views used for the input and the output\n");
    }
  }
  printf("device: %s\n", vkd_delegate_device_name(h));
  CHECK(vkd_delegate_validation_message_count(h) == 0, "%lu validation messages",
        (unsigned long)vkd_delegate_validation_message_count(h));

  if (n_in == 1 && n_out >= 1) check_execute_errors(h, in_data, out_data);

  vkd_delegate_destroy(h);
  for (i = 0; i < n_in; ++i) free(in_data[i]);
  for (i = 0; i < n_out; ++i) free(out_data[i]);
  free(in_data);
  free(out_data);
  free(inputs);
  free(outputs);

  /* ABI rule: an app built against an older, smaller vkd_options still loads. */
  {
    size_t old_size = offsetof(vkd_options, pipeline_cache_file);
    unsigned char* blob2 = read_file(model_path, &blob_size);
    vkd_options old_options = options;
    old_options.struct_size = old_size;
    old_options.constant_batch_bytes = 0; /* outside old_size: must not be read */
    old_options.gpu_timeout_ms = 0;
    st = blob2 ? vkd_delegate_init(blob2, blob_size, &old_options, &h) : VKD_ERROR_INTERNAL;
    printf("options with struct_size %lu (older header): %s %s\n", (unsigned long)old_size,
           vkd_status_name(st), vkd_init_error());
    CHECK(st == VKD_OK, "init with a smaller vkd_options failed");
    vkd_delegate_destroy(h);
    free(blob2);
  }

  free(blob);
  if (g_failures != 0) {
    printf("FAIL: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
