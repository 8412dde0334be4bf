"""The static leaderboard site: data from the DuckDB store, Jinja2 templates, Altair charts."""
