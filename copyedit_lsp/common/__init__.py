"""What the benchmarks, the training builder and the CLI share: the edit sets (``datasets``) and
the reports' tables and files (``reports``).  Imports nothing else of the package."""
