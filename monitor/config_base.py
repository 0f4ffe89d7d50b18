"""What every part of the configuration's schema shares: the patterns of names, URLs and listen
addresses with their words for error messages, and the strict base model (unknown keys are
errors, specs are frozen)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from monitor.addresses import LISTEN_PATTERN, LISTEN_WORDS

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,62}$"
URL_PATTERN = r"^https?://[^\s/]+(/[^\s]*)?$"
ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
LISTEN = LISTEN_PATTERN
SCHEDULE_PATTERN = r"^(mon|tue|wed|thu|fri|sat|sun) \d{2}:\d{2}$"
#: What a value failing each pattern should have looked like, in words.
PATTERN_WORDS = {
    NAME_PATTERN: "a lowercase name of letters, digits, '_', '.' or '-'",
    URL_PATTERN: "an http:// or https:// URL",
    ENV_VAR_PATTERN: "an environment variable name such as M3_API_KEY",
    LISTEN: LISTEN_WORDS,
    SCHEDULE_PATTERN: "a weekly time such as 'mon 09:00'",
}


Name = Annotated[str, Field(pattern=NAME_PATTERN)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
