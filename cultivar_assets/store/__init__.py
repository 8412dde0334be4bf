"""The DuckDB database: schema, views and named queries from sql/*.sql (no Dagster)."""
