"""Decoding: the edit contract (options, results, the decoder interface), prompts, the program
writer and the refusal, the apply pipeline, and the decoders behind the contract: the local one on
llama.cpp (its model, tokens, drafts, selectors) and the remote one over HTTP.

Imports the core; never the server, the benchmarks, training or the CLI.  The contract's modules
(edit, prompt, refusal, writer, fast_apply) import neither llama.cpp nor pygls.
"""
