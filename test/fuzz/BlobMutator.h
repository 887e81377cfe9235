// Structure-aware mutation of delegate blobs for fuzz_load_blob (LLVMFuzzerCustomMutator).
//
// A blob deserialize() accepts (without an op table) is taken apart into its values, ops and
// inputs/outputs; ONE thing is changed: a tensor's dtype, storage, layout or a size (its
// constant resized to match, mostly, so the blob still passes deserialize and reaches the op
// builders), a constant's size or bytes (special floats: NaN, inf, 0, huge), a scalar or list
// value, an op's name or an argument, op order, an input/output, or a value is cloned; then the
// blob is written again with serialization's GraphBuilder (sealed: checksums that match, so the
// mutant reaches the checks behind them). A blob whose checksums are stale is taken apart all
// the same (read from a resealed copy). Byte-level mutation (which also
// reaches the header and the flatbuffer encoding: misaligned constants, bad offsets) stays
// with libFuzzer's own mutator, used for inputs that do not deserialize and part of the time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serialization/Deserializer.h"

namespace vkd::fuzz {

// The mutated blob, or nullopt when `data` (resealed) does not deserialize or the mutation
// found nothing to change. `op_names`: the names an op may be renamed to. With
// `prefer_valid_for`, a few mutations are tried in turn until one gives a blob that passes
// deserialize() with that op table (the last one is returned when none does), so most mutants
// reach the loader. Deterministic in `seed`.
std::optional<std::vector<uint8_t>> mutate_blob_structure(
    const uint8_t* data, size_t size, unsigned seed, const std::vector<std::string>& op_names,
    const serialization::OpSignatureTable* prefer_valid_for = nullptr);

}  // namespace vkd::fuzz
