"""The core: the edit program, its grammar and resolver, a change's forms and their deterministic
placement, scopes and the guard against lost code.

Plain text in, plain text out: imports nothing else of the package, nor llama.cpp, nor pygls.
"""
