/* The C side of tools/bench_python_runtime.py, which compiles it (cc -shared) and loads it into
 * the Python process next to libvkdmodel, on the same vkd_model handle as the runtime:
 *   bench_timed_execute  vkd_model_execute timed from inside C; the runtime calls it in place of
 *                        vkd_model_execute, so run()'s wall minus this is the binding's cost
 *                        per call, free of the GPU's run-to-run jitter;
 *   bench_noop_execute   returns VKD_OK at once: in its place, run() costs only the binding;
 *   bench_c_loop         `runs` executes in a C loop on fixed tensors: the C API as an app
 *                        calls it, each call's wall time in times[i]. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <stdint.h>
#include <time.h>

#include <vkdelegate/vkd_model.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t g_last_execute_ns;

vkd_status bench_timed_execute(vkd_model* model, const vkd_tensor* inputs, size_t input_count,
                               vkd_tensor* outputs, size_t output_count) {
  const uint64_t t0 = now_ns();
  const vkd_status status = vkd_model_execute(model, inputs, input_count, outputs, output_count);
  g_last_execute_ns = now_ns() - t0;
  return status;
}

uint64_t bench_last_execute_ns(void) { return g_last_execute_ns; }

vkd_status bench_noop_execute(vkd_model* model, const vkd_tensor* inputs, size_t input_count,
                              vkd_tensor* outputs, size_t output_count) {
  (void)model;
  (void)inputs;
  (void)input_count;
  (void)outputs;
  (void)output_count;
  return VKD_OK;
}

vkd_status bench_c_loop(vkd_model* model, const vkd_tensor* inputs, size_t input_count,
                        vkd_tensor* outputs, size_t output_count, size_t runs, uint64_t* times) {
  size_t i;
  for (i = 0; i < runs; ++i) {
    const uint64_t t0 = now_ns();
    const vkd_status status = vkd_model_execute(model, inputs, input_count, outputs, output_count);
    times[i] = now_ns() - t0;
    if (status != VKD_OK) return status;
  }
  return VKD_OK;
}
