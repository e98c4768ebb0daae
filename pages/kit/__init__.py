"""What the page scripts share, one module per concern: runtime (the store and the caches), state (URL and
view state), text, charts, widgets and access (the write gate). Imports nothing by itself and patches nothing:
app.py installs the upload guard (access.guard_uploads)."""
