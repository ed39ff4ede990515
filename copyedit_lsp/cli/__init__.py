"""The ``copyedit`` command: its entry point (``main``), the demo and the settings files.

The top layer: may import every other folder; nothing imports it.
"""
