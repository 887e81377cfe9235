#include "compiler/GraphIR.h"
#include "compiler/fusion/FuseState.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/reference/Reference.h"
