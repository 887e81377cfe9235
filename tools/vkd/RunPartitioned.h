// `vkd run MODEL.partition.json --input NAME=FILE.npy ... [--weights W]`: a partitioned model
// run whole through the public C++ API (vkd::Model, vkdelegate/Model.hpp), one line per step
// saying where it ran and how long it took, outputs written as for a .vkd. As for a .vkd, every
// file and every input is checked before the first step runs, so a failing call writes nothing.
#pragma once

#include "tools/vkd/RunSteps.h"

namespace vkd::cli {

// The process exit code (0, or 1 on validation messages); errors are CliError.
int run_partitioned(RunOptions opt);

}  // namespace vkd::cli
