-- The translation cache (SQLite, one file per model; cultivar_assets/translation.py).

-- name: cache_schema
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS outputs (key TEXT PRIMARY KEY, raw TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS engine_info (fingerprint TEXT PRIMARY KEY, info TEXT);

-- Keys come as one JSON array parameter.
-- name: cache_get_outputs
SELECT key, raw FROM outputs WHERE key IN (SELECT value FROM json_each(?));

-- name: cache_put_output
INSERT OR REPLACE INTO outputs VALUES (?, ?);

-- name: cache_get_engine_info
SELECT info FROM engine_info WHERE fingerprint = ?;

-- name: cache_put_engine_info
INSERT OR REPLACE INTO engine_info VALUES (?, ?);
