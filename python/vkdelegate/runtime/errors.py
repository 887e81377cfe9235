"""The runtime's exception: a failed library call (or a run() argument the library would refuse)
as VkdError, carrying the C API's status and message."""
import enum


class Status(enum.IntEnum):
    """vkd_status (vkd_delegate.h), same numbers."""
    OK = 0
    INVALID_ARGUMENT = 1  # malformed blob or plan, wrong input count/shape/dtype, bad option
    UNSUPPORTED = 2       # valid, but the device or this build cannot run it
    OUT_OF_MEMORY = 3
    DEVICE_LOST = 4       # the program is unusable afterwards; close it
    VULKAN = 5
    INTERNAL = 6
    TIMEOUT = 7           # the GPU did not finish within gpu_timeout_ms; close the program


class VkdError(Exception):
    """A failure reported by vkdelegate: `status` (a Status, or the int a newer library gave)
    and `message` (the library's own words, also str(error))."""

    def __init__(self, status, message: str):
        try:
            status = Status(status)
        except ValueError:
            pass  # a status this binding does not know yet: kept as the int
        super().__init__(message)
        self.status = status
        self.message = message

    def __repr__(self):
        name = self.status.name if isinstance(self.status, Status) else str(self.status)
        return f"VkdError({name}, {self.message!r})"


def invalid_argument(message: str) -> VkdError:
    return VkdError(Status.INVALID_ARGUMENT, message)
