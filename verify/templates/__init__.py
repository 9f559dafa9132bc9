"""The LaTeX report templates (Jinja2, read by ``verify.report``); package data."""
