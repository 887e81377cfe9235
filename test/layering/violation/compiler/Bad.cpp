#include "core/Error.h"
#include "runtime/graph/ComputeGraph.h"
