"""Core: what every layer may use and that uses nothing of evalcore's own: errors, names, paths,
tokenizers, language detection, spreadsheet-safe export, and the allocator tuning."""
