// The Query page's DuckDB-Wasm API, bundled with esbuild into one script (window.CultivarDuckDB).
export { AsyncDuckDB, DuckDBAccessMode } from "@duckdb/duckdb-wasm";
export { tableFromArrays } from "apache-arrow";
