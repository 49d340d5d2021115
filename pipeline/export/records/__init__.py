"""The release's records beside its site: what it holds (`manifest`, `filestat`), what it
depends on (`digests`), what the next build may trust of it (`state`), and what the build did
(`report`, `report_html`, `history`)."""
