-- Schema versions and layouts (raw.schema_version; cultivar_assets/store/migrations.py).

-- name: read_schema_version
SELECT max(version) FROM raw.schema_version;

-- A file with no table in schema raw is new; one with tables but no raw.schema_version is
-- version 0.
-- name: count_raw_tables
SELECT count(*) FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'raw';

-- name: record_schema_version
INSERT INTO raw.schema_version (version, applied_at, applied_by)
VALUES ($version, $applied_at, $applied_by);

-- The layout of the raw tables: columns in order, constraints.
-- name: raw_columns
SELECT table_name, column_name, data_type, is_nullable, column_default
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'raw'
ORDER BY table_name, column_index;

-- name: raw_constraints
SELECT table_name, constraint_type, constraint_text
FROM duckdb_constraints()
WHERE database_name = current_database() AND schema_name = 'raw';
