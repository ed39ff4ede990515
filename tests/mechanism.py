"""What the tests that run a real Qwen model name, so that the product's defaults do not choose it."""

MODEL = "qwen2.5-coder-0.5b"  # the tests' own model: the default, the 1.5B, decodes ~3x slower on CI's two cores
SETTINGS = {"model": MODEL, "mode": "program"}  # the language server's, as initializationOptions
ARGUMENTS = ("--model", MODEL, "--mode", "program")  # `copyedit apply`'s (serve, demo and bench take --model alone)
