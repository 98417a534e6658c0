"""Plumbing: errors and exit codes, bounded file and YAML reading, HTTP, logs, progress,
text, backoff, flag types, metrics. Imports nothing else of the project's."""
