#include "runtime/vk/Context.h"
#include "runtime/vk/WorkgroupChooser.h"
