#include "model/PartitionPlan.h"
#include "runtime/ops/OpRegistry.h"
