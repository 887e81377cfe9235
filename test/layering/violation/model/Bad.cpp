#include "compiler/Interpreter.h"
#include "runtime/graph/ComputeGraph.h"
