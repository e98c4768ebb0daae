"""Importers. Each one validates a whole file first, then writes it in one transaction."""
