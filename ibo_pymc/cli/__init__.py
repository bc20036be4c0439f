"""Command-line tools: thin layers over the library's public functions."""
