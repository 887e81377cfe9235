// What a model reads before a device is touched (vkd::Model::load): the plan, every blob, the
// constants its host steps read and the one-node graph each host step runs as. Every problem is
// an Error(InvalidArgument) naming the plan, the step and the file or tensor, all the blobs or
// constants at fault at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/Interpreter.h"
#include "core/InputFile.h"
#include "model/PartitionPlan.h"

namespace vkd::model {

using TensorMap = std::map<std::string, compiler::HostTensor>;

struct PlanFiles {
  PartitionPlan plan;
  std::vector<std::vector<uint8_t>> blobs;   // per step; empty for a host step
  TensorMap constants;                       // by value name
  std::vector<compiler::Graph> host_graphs;  // per step; empty for a GPU step
};

// A blob file, its magic read first: a file that is not one is refused ("it is not a vkdelegate
// blob") without being read whole or quoted. `symlinks`: Refuse for a plan's blobs (files of
// its own folder), Follow for one the caller names. Error(InvalidArgument) naming the file.
std::vector<uint8_t> read_blob_file(const std::string& path, Symlinks symlinks);

// `path` as vkd::Model::load takes it. A partition plan (is_partition_plan_path): the plan
// (PartitionPlan.h), every blob it names (each a regular file of the plan's directory, no
// symbolic link, starting with the blob magic: "is not a vkdelegate blob") and, when a host step
// reads a constant, the constants from `weights_path` (by the plan's weights name, dtype and
// shape checked; an error when it is missing). Anything else is a blob, read as a plan of one
// GPU step that its delegate describes (PartitionPlan::from_blob). `weights_path` where no host
// step reads a constant is not read (vkd run says it is unused).
PlanFiles read_model_files(const std::string& path, const std::optional<std::string>& weights_path);

}  // namespace vkd::model
