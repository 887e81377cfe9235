#include "compiler/GraphIR.h"
#include "compiler/ops/EdgeOp.h"
