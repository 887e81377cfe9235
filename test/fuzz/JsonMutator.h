// A structure-aware mutation of a JSON document, for the JSON targets' custom mutators: byte
// mutations of JSON text mostly break its syntax (4 in 5 of fuzz_partition_plan's inputs were
// "malformed JSON"), so the reader's later checks and what runs after them are rarely reached.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkd::fuzz {

// `text` with one change to one of its values, picked by `seed`: a number made 0, +-1, off by
// one, doubled or a size past the caps (2^31, 2^62 + 1, INT64_MAX, 2^64 - 1); a string made
// another string of the document or one of `words`; an array with an element removed,
// duplicated or swapped; an object with a member removed, or given a member of another object;
// any value replaced by a copy of another value of the document, or wrapped in an array (one
// level deeper). nullopt when `text` is not JSON (or nests deeper than the readers accept):
// the caller mutates its bytes instead.
std::optional<std::string> mutate_json(const std::string& text, uint32_t seed,
                                       const std::vector<std::string>& words);

}  // namespace vkd::fuzz
