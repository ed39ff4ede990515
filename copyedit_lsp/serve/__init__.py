"""The front ends: the language server (framing, protocol, handlers, regions, text edits, code
actions, the live view, settings), its worker, the OpenAI-compatible HTTP endpoint, and an LSP
client over stdio for the demo and the benchmarks.

Imports the core and the decode layer's contract; reaches a decoder only through
``worker.open_editor``.
"""
