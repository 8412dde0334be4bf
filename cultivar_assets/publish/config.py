"""Configuration of the Hugging Face dataset publication.

Original FLORES sentences (``source_original``, ``english_original``) are published only when
``include_originals`` says so. FLORES and Cultivar are CC BY-SA 4.0, which allows redistribution
with attribution, but the FLORES maintainers ask that FLORES text not be re-hosted in crawlable
plain form. So the default (``None``) includes them for the bundled demo data, whose "originals"
were written for this project, and leaves them out of real data; ``True`` or ``False`` overrides.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from cultivar_assets.paths import cultivar_home
from cultivar_assets.secrets import env_name, secret_from_env, url_without_credentials

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$", re.ASCII)


def default_folder() -> Path:
    return cultivar_home() / "publish" / "hf_dataset"


class PublishConfig(BaseModel):
    """Where the dataset folder is written, what it holds, and where it is pushed."""

    # a value refused here may be a token: pydantic's message never repeats an input
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    folder: str | None = None  # default: $CULTIVAR_HOME/publish/hf_dataset
    include_originals: bool | None = None  # None: only for the demo data (see module docstring)
    pretty_name: str | None = None  # default: "Cultivar" (demo: names the demo data)
    repo_id: str | None = None  # e.g. "me/Cultivar-flores"; None: dry run
    token_env: str = "HF_TOKEN"  # name of the environment variable holding the write token
    endpoint: str | None = None  # None: huggingface_hub's default ($HF_ENDPOINT or the Hub)
    private: bool | None = None  # visibility of a repo that the push creates; None: Hub default
    allow_demo_push: bool = False  # the demo data is only pushed when this is set
    commit_message: str = "Update the Cultivar dataset"

    @field_validator("repo_id")
    @classmethod
    def _repo_id(cls, value: str | None) -> str | None:
        if value is not None and not REPO_ID.match(value):
            raise ValueError(f"repo_id {value!r} is not <namespace>/<name>")
        return value

    @field_validator("token_env")
    @classmethod
    def _token_env(cls, value: str) -> str:
        return env_name(value, "token_env")  # a name, never the token itself

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return url_without_credentials(value, "endpoint")

    @property
    def folder_path(self) -> Path:
        return Path(self.folder).expanduser().resolve() if self.folder else default_folder()

    def originals_included(self, is_demo: bool) -> bool:
        return is_demo if self.include_originals is None else self.include_originals

    def token(self) -> str | None:
        """The token from the environment (never stored in the configuration)."""
        return secret_from_env(self.token_env)
