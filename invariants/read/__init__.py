"""Bytes to records: files, zstd frames, chunk rows, the SQLite store, discovery, era detection, profiles, captures."""
