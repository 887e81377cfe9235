#include "compiler/Compiler.h"
#include "runtime/ops/OpRegistry.h"
