/* vkd_execute: the CPython extension module through which vkdelegate.runtime's run() calls
 * vkd_model_execute when it is built (python/vkdelegate/runtime/_execute.py chooses, once, at
 * import; ctypes otherwise). It hands the arrays' memory to the C API as the ctypes path does,
 * but in C: no ctypes conversion per argument, no Python code between the checks and the call.
 * That matters most after the call, when a device run has left the CPU's caches cold and every
 * line of code and data touched costs a miss (tools/bench_python_runtime.py measures both paths).
 *
 * CPython's stable ABI, Py_LIMITED_API 3.11 (the first whose limited API has the buffer
 * protocol): one build, vkd_execute.abi3.so, serves every CPython >= 3.11. It links neither
 * libpython nor libvkdmodel: the function it calls comes in the plan, as ctypes loaded it.
 *
 *   execute(plan, inputs, outputs) -> int | None
 *     plan     the address of a vkd_call_plan (_execute.CallPlan, built once per program; the
 *              caller keeps it alive and holds the program's lock, so the handle is open)
 *     inputs   tuple or list of numpy arrays, one per model input
 *     outputs  tuple or list of numpy arrays the outputs are written to
 *   The C API's vkd_status, or None, without calling it, when an argument is not exactly what
 *   the plan's tensor says: a numpy.ndarray (not a subclass) of its dtype and shape, C-contiguous,
 *   an output writable and sharing no byte with another argument. The caller then checks and
 *   converts them in Python (with the error messages) and calls again. */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "vkdelegate/vkd_model.h"

typedef vkd_status (*vkd_execute_fn)(vkd_model*, const vkd_tensor*, size_t, vkd_tensor*, size_t);

/* Mirrored field for field by _execute.CallPlan (PLAN_SIZE lets it check the two agree). Each
 * tensor's data pointer is unused: a call fills in its own copies. */
typedef struct vkd_call_plan {
  vkd_execute_fn execute;
  vkd_model* handle;
  const vkd_tensor* inputs;
  size_t input_count;
  const vkd_tensor* outputs;
  size_t output_count;
} vkd_call_plan;

/* numpy.ndarray, looked up once at import: only plain arrays take the fast path, as in the
 * ctypes path (a subclass goes through the Python checks). */
static PyObject* g_ndarray_type;

/* Tensors a call handles on the stack; more take one PyMem allocation. */
#define STACK_TENSORS 8

static Py_ssize_t sequence_length(PyObject* sequence) {
  if (PyTuple_Check(sequence)) return PyTuple_Size(sequence);
  if (PyList_Check(sequence)) return PyList_Size(sequence);
  return -1;
}

static PyObject* sequence_item(PyObject* sequence, Py_ssize_t index) {  // borrowed
  return PyTuple_Check(sequence) ? PyTuple_GetItem(sequence, index)
                                 : PyList_GetItem(sequence, index);
}

/* The buffer-protocol format of a native-order numpy array of `dtype` is one of these codes,
 * optionally behind a byte-order mark meaning native order. */
static int format_matches(const char* format, vkd_dtype dtype) {
  const uint16_t one = 1;
  const char native = *(const char*)&one == 1 ? '<' : '>';
  if (format == NULL) return 0;
  if (format[0] == '@' || format[0] == '=' || format[0] == native) ++format;
  switch (dtype) {
    case VKD_FLOAT32: return strcmp(format, "f") == 0;
    case VKD_INT32:
      return strcmp(format, "i") == 0 || strcmp(format, "l") == 0;  // itemsize checked too
    case VKD_INT8: return strcmp(format, "b") == 0;
  }
  return 0;
}

static Py_ssize_t item_size(vkd_dtype dtype) { return dtype == VKD_INT8 ? 1 : 4; }

static int view_matches(const Py_buffer* view, const vkd_tensor* spec) {
  if (view->len != (Py_ssize_t)spec->bytes || view->ndim != (int)spec->rank ||
      view->itemsize != item_size(spec->dtype) || !format_matches(view->format, spec->dtype)) {
    return 0;
  }
  for (int d = 0; d < view->ndim; ++d) {
    if (view->shape[d] != spec->sizes[d]) return 0;
  }
  return 1;
}

static int overlaps(const Py_buffer* a, const Py_buffer* b) {
  const char* a0 = a->buf;
  const char* b0 = b->buf;
  return a->len > 0 && b->len > 0 && a0 < b0 + b->len && b0 < a0 + a->len;
}

/* Exports argument `index` (inputs first, then outputs) into views[index] and its tensor;
 * 0 when it is not one the plan takes as it is (no Python error left set). */
static int take(PyObject* object, const vkd_tensor* spec, int writable, Py_buffer* view,
                vkd_tensor* tensor) {
  if ((PyObject*)Py_TYPE(object) != g_ndarray_type) return 0;
  const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(object, view, flags) != 0) {
    PyErr_Clear();  // non-contiguous or read-only: the Python checks say which
    return 0;
  }
  if (!view_matches(view, spec)) {
    PyBuffer_Release(view);
    return 0;
  }
  *tensor = *spec;
  tensor->data = view->buf;
  return 1;
}

static PyObject* execute(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  (void)module;
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "execute(plan, inputs, outputs) takes 3 arguments");
    return NULL;
  }
  const vkd_call_plan* plan = PyLong_AsVoidPtr(args[0]);
  if (plan == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "execute: the plan is NULL");
    return NULL;
  }
  const Py_ssize_t input_count = sequence_length(args[1]);
  const Py_ssize_t output_count = sequence_length(args[2]);
  if (input_count != (Py_ssize_t)plan->input_count ||
      output_count != (Py_ssize_t)plan->output_count) {
    Py_RETURN_NONE;
  }
  const Py_ssize_t count = input_count + output_count;
  Py_buffer stack_views[STACK_TENSORS];
  vkd_tensor stack_tensors[STACK_TENSORS];
  Py_buffer* views = stack_views;
  vkd_tensor* tensors = stack_tensors;
  if (count > STACK_TENSORS) {
    views = PyMem_Malloc((size_t)count * sizeof(Py_buffer));
    tensors = PyMem_Malloc((size_t)count * sizeof(vkd_tensor));
    if (views == NULL || tensors == NULL) {
      PyMem_Free(views);
      PyMem_Free(tensors);
      return PyErr_NoMemory();
    }
  }

  Py_ssize_t taken = 0;
  int usable = 1;
  for (; taken < count; ++taken) {
    const int output = taken >= input_count;
    const vkd_tensor* spec = output ? &plan->outputs[taken - input_count] : &plan->inputs[taken];
    PyObject* object =
        sequence_item(output ? args[2] : args[1], output ? taken - input_count : taken);
    if (!take(object, spec, output, &views[taken], &tensors[taken])) {
      usable = 0;
      break;
    }
    for (Py_ssize_t other = 0; output && other < taken; ++other) {
      if (overlaps(&views[taken], &views[other])) usable = 0;  // an output must be its own
    }
    if (!usable) {
      ++taken;  // released below with the others
      break;
    }
  }

  PyObject* result = NULL;
  if (usable) {
    vkd_status status;
    Py_BEGIN_ALLOW_THREADS status = plan->execute(plan->handle, tensors, (size_t)input_count,
                                                  tensors + input_count, (size_t)output_count);
    Py_END_ALLOW_THREADS result = PyLong_FromLong((long)status);
  }
  for (Py_ssize_t i = 0; i < taken; ++i) PyBuffer_Release(&views[i]);
  if (views != stack_views) {
    PyMem_Free(views);
    PyMem_Free(tensors);
  }
  if (!usable) Py_RETURN_NONE;
  return result;
}

static PyMethodDef g_methods[] = {
    {"execute", (PyCFunction)(void (*)(void))execute, METH_FASTCALL,
     "execute(plan, inputs, outputs) -> vkd_status, or None for an argument the plan does not "
     "take as it is"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef g_module = {PyModuleDef_HEAD_INIT,
                                      "vkd_execute",
                                      "vkd_model_execute for vkdelegate.runtime's run()",
                                      -1,
                                      g_methods,
                                      NULL,
                                      NULL,
                                      NULL,
                                      NULL};

PyMODINIT_FUNC PyInit_vkd_execute(void) {
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (numpy == NULL) return NULL;
  PyObject* ndarray = PyObject_GetAttrString(numpy, "ndarray");
  Py_DECREF(numpy);
  if (ndarray == NULL) return NULL;
  PyObject* module = PyModule_Create(&g_module);
  if (module == NULL ||
      PyModule_AddIntConstant(module, "PLAN_SIZE", (long)sizeof(vkd_call_plan)) != 0) {
    Py_XDECREF(module);
    Py_DECREF(ndarray);
    return NULL;
  }
  Py_XDECREF(g_ndarray_type);
  g_ndarray_type = ndarray;  // kept for the life of the process
  return module;
}
