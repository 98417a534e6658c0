"""Plumbing: errors and exit codes, bounded file and YAML reading, HTTP, logs, progress,
text, backoff, flag types, metrics, the version, and the program's name as invoked
(``prog``). Imports nothing else of the project's."""
