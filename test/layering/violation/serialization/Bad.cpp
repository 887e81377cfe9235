#include "runtime/core/Error.h"
#include "runtime/vk/Context.h"
