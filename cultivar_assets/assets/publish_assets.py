"""Publishing the benchmark data as a Hugging Face dataset: the repository folder, then the push."""

import dagster as dg

from cultivar_assets.assets.conditions import AFTER_NEW_RESULTS
from cultivar_assets.assets.data_assets import test_sets
from cultivar_assets.assets.safety import redacting
from cultivar_assets.engines.prompts import get_prompt_style
from cultivar_assets.publish.dataset_folder import FileEntry, build_dataset_folder
from cultivar_assets.publish.lm_eval_tasks import DEFAULT_PROMPT_STYLE, LmEvalTasks
from cultivar_assets.publish.push import push_dataset
from cultivar_assets.publish.records import read_dataset_info, read_publish_data
from cultivar_assets.resources import (
    EngineResource,
    HubPublishResource,
    MetricsResource,
    StoreResource,
)
from cultivar_assets.tables import markdown_table
from cultivar_assets.versions.inputs import combined


def _files_table(files: list[FileEntry]) -> dg.MetadataValue:
    return dg.MetadataValue.md(markdown_table(
        [f.as_dict() for f in files], [("path", "path"), ("size", "bytes"), ("sha256", "sha256")]))


# follows the data it holds (test_sets), not model results: the folder holds no scores
# the lm-eval tasks it holds follow the metrics' settings and engine.max_new_tokens
@dg.asset(group_name="publish", deps=[test_sets], kinds={"parquet", "huggingface"},
          automation_condition=AFTER_NEW_RESULTS)
@redacting
def hf_dataset_folder(
    context: dg.AssetExecutionContext, store: StoreResource, hf_publish: HubPublishResource,
    metrics: MetricsResource, engine: EngineResource,
) -> dg.MaterializeResult:
    """The dataset repository folder in the Hub's layout: data/<locale>/test.parquet, README.md,
    lm_eval_tasks/ (the test sets as lm-evaluation-harness tasks, default prompt style)."""
    tasks = LmEvalTasks(get_prompt_style(DEFAULT_PROMPT_STYLE), metrics.config(),
                        engine.settings().max_new_tokens)
    folder = build_dataset_folder(read_publish_data(store.store()), hf_publish.config(), tasks)
    context.log.info(f"wrote {len(folder.files)} files to {folder.path} (originals "
                     f"{'included' if folder.include_originals else 'left out'})")
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(folder.path)),
            "demo_data": folder.info.is_demo,
            "dataset_fingerprint": folder.info.fingerprint,
            "include_originals": folder.include_originals,
            "files": dg.MetadataValue.json([f.as_dict() for f in folder.files]),
            "files_table": _files_table(folder.files),
            "rows_per_locale": dg.MetadataValue.json(folder.rows),
            "front_matter": dg.MetadataValue.json(folder.card.front_matter),
            "card_preview": dg.MetadataValue.md(folder.card.body),
        },
        data_version=dg.DataVersion(folder.digest),
    )


@dg.asset(group_name="publish", deps=[hf_dataset_folder], kinds={"huggingface"})
@redacting
def hf_dataset_push(
    context: dg.AssetExecutionContext, store: StoreResource, hf_publish: HubPublishResource
) -> dg.MaterializeResult:
    """The folder pushed to the Hub; without a repo id and a token, a dry run listing the files."""
    config = hf_publish.config()
    info = read_dataset_info(store.store())
    result = push_dataset(config.folder_path, config, is_demo=info.is_demo, token=config.token(),
                          fingerprint=info.fingerprint)
    if result.pushed:
        context.log.info(f"pushed {len(result.files)} files to {result.repo_id}: "
                         f"{result.commit_url}")
    else:
        context.log.info(f"dry run, nothing pushed: {result.reason}")
    meta = result.metadata()
    return dg.MaterializeResult(metadata={
        **{key: meta[key] for key in ("pushed", "repo_id", "endpoint", "reason")},
        "token_env": config.token_env,
        "commit_url": dg.MetadataValue.url(meta["commit_url"]) if result.pushed else "",
        "kept_configs": dg.MetadataValue.json(meta["kept_configs"]),
        "files": dg.MetadataValue.json(meta["files"]),
        "files_table": _files_table(result.files),
    }, data_version=dg.DataVersion(combined({  # what was pushed (or listed, in a dry run)
        key: meta[key] for key in ("pushed", "repo_id", "files")})))
