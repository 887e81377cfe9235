"""vkdelegate's Python side: the PyTorch exporter (`vkdelegate.export`) and example models.

Pure Python on top of torch and numpy; the C++ library and the `vkd` CLI do not need it.
"""
import logging


class _QuietEnumRegistration(logging.Filter):
    """torchao 0.18 registers its Enums as pytree constants when imported, and torch 2.14 logs a
    deprecation warning for each on stderr: noise for our users, and it would break the
    exporter's promise of one line on stderr for a user error."""

    def filter(self, record):
        return "is an Enum subclass and is now natively supported" not in str(record.msg)


logging.getLogger("torch.utils._pytree").addFilter(_QuietEnumRegistration())
