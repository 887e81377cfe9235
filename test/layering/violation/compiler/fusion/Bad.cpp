#include "compiler/Interpreter.h"
#include "compiler/PassReport.h"
#include "compiler/reference/QuantChain.h"
