#include "core/Error.h"
#include "runtime/vk/Context.h"
