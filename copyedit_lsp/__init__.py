"""copyedit-lsp: apply code edits written by a local LLM as copy/gen edit programs."""

__version__ = "0.1.0"
