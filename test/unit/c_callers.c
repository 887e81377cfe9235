/* What a C app may write and a C++ test cannot without undefined behaviour: any int where the C
 * API takes an enum (C converts it; C++ may not hold a value outside the enum's range). For
 * test_delegate.cpp's checks that the C API reads such fields as integers. */
#include "vkdelegate/vkd_delegate.h"

const char* vkd_test_status_name_of_int(int value);
void vkd_test_set_dtype(vkd_tensor* tensor, int value);

const char* vkd_test_status_name_of_int(int value) { return vkd_status_name((vkd_status)value); }

void vkd_test_set_dtype(vkd_tensor* tensor, int value) { tensor->dtype = (vkd_dtype)value; }
