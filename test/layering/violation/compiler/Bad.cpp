#include "runtime/graph/ComputeGraph.h"
#include "runtime/core/Error.h"
