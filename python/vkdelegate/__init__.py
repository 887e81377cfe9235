"""vkdelegate's Python side: the PyTorch exporter (`vkdelegate.export`) and example models.

Pure Python on top of torch and numpy; the C++ library and the `vkd` CLI do not need it.
"""
