"""Services: long-running work around a store (scoring jobs queued by an import and run in the
background, the embedded default store built on first run)."""
