from . import attention, functional  # noqa: F401
