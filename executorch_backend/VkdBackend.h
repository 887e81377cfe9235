// What libvkd_executorch.so exports besides its registration: a symbol the runner references
// (so the linker keeps the library, and with it the static initializer that registers
// VkdBackend) and that Python can ask through ctypes.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// The ExecuTorch Error code register_backend returned for "VkdBackend" (0 = registered).
__attribute__((visibility("default"))) int vkd_executorch_registration_error(void);

// The name of the Vulkan device the last VkdBackend delegate was loaded on ("" before any):
// what a benchmark prints beside its figures. Valid until the next delegate loads.
__attribute__((visibility("default"))) const char* vkd_executorch_device_name(void);

#ifdef __cplusplus
}
#endif
