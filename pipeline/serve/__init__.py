"""Serving: the published build over HTTP (`server`), every request routed to its file or to a
live answer (`routes`), live answers computed from the warehouse (`live`)."""
