"""Publishing the benchmark data as a Hugging Face dataset (no Dagster).

- :mod:`~cultivar_assets.publish.config`: what to publish and where (:class:`PublishConfig`);
- :mod:`~cultivar_assets.publish.records`: what is read from the DuckDB store;
- :mod:`~cultivar_assets.publish.dataset_folder`: the dataset repository folder in the Hub's
  layout (``data/<locale>/test.parquet`` and ``README.md``), built from the DuckDB store;
- :mod:`~cultivar_assets.publish.card`: the dataset card (YAML front matter and Markdown body);
- :mod:`~cultivar_assets.publish.push`: the upload with ``huggingface_hub``, or a dry run.
"""
