// The op schema as the blob validator sees it: argument kinds of every op with a kernel. Used by
// the runtime (OpRegistry) and by the compiler (checking the blob it wrote), so both validate
// against the same table.
#pragma once

#include "partitioner_schema/OpSchema.h"
#include "serialization/Deserializer.h"

namespace vkd::schema {

serialization::ValueKind to_value_kind(ArgKind kind);
serialization::OpSignature signature_of(const OpSchema& op);
// Every op with has_kernel.
serialization::OpSignatureTable kernel_signatures();

}  // namespace vkd::schema
