"""The exporter's user-facing errors."""


class ExportError(Exception):
    """A problem with what the user asked for or gave (model, arguments, files), reported by the
    CLI as one message without a traceback (exit status 2). Bugs in the exporter stay ordinary
    exceptions, with their traceback."""
    status = 2


class CompileError(ExportError):
    """`vkd compile` refused the exported graph (exit status 1; the graph IR files are kept)."""
    status = 1
