"""The names tether-otel writes: span names, attribute keys, event and metric names.

The GenAI ones follow the OpenTelemetry GenAI semantic conventions as published in
semantic-conventions :data:`GENAI_CONVENTIONS` (status: Development; the conventions have
since moved to their own repository, ``semantic-conventions-genai``, and are still being
renamed). Every name is said here once, so following a rename is an edit of this module.
The ``tether.*`` names are tether's own.
"""

from __future__ import annotations

from typing import Final

GENAI_CONVENTIONS: Final = "v1.41.0"
"""The semantic-conventions release whose ``docs/gen-ai`` the GenAI names below follow."""

SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.41.0"
"""The schema URL of tether-otel's tracer and meter (the same release)."""

# -- operations and span names ---------------------------------------------------------------
INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"


def chat_span_name(model: str) -> str:
    """``chat {gen_ai.request.model}``."""
    return f"{CHAT} {model}"


def tool_span_name(tool: str) -> str:
    """``execute_tool {gen_ai.tool.name}``."""
    return f"{EXECUTE_TOOL} {tool}"


# -- GenAI attributes ------------------------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
TOKEN_TYPE: Final = "gen_ai.token.type"
ERROR_TYPE: Final = "error.type"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"

# -- GenAI metrics ---------------------------------------------------------------------------
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"

# -- tether's own ----------------------------------------------------------------------------
RUN_ID: Final = "tether.run.id"
RUN_PARENT_ID: Final = "tether.run.parent_id"
RUN_OUTCOME: Final = "tether.run.outcome"
RUN_TURNS: Final = "tether.run.turns"
RUN_TOOL_CALLS: Final = "tether.run.tool_calls"
RUN_TOOL_ERRORS: Final = "tether.run.tool_errors"
RUN_RETRIES: Final = "tether.run.retries"
COST_USD: Final = "tether.cost.usd"
CACHE_HIT_RATIO: Final = "tether.cache.hit_ratio"
CACHE_THRESHOLD: Final = "tether.cache.threshold"
ATTEMPTS: Final = "tether.attempts"
RETRY_ATTEMPT: Final = "tether.retry.attempt"
RETRY_DELAY_S: Final = "tether.retry.delay_s"
TOOL_OUTCOME: Final = "tether.tool.outcome"
COMPACTION_STRATEGY: Final = "tether.compaction.strategy"
COMPACTION_TOKENS_BEFORE: Final = "tether.compaction.tokens_before"
COMPACTION_TOKENS_AFTER: Final = "tether.compaction.tokens_after"
COMPACTION_MESSAGES_BEFORE: Final = "tether.compaction.messages_before"
COMPACTION_MESSAGES_AFTER: Final = "tether.compaction.messages_after"

EVENT_RETRY: Final = "gen_ai.retry"
EVENT_EXCEPTION: Final = "exception"
EVENT_COMPACTION: Final = "tether.compaction"
EVENT_CACHE_WARNING: Final = "tether.cache_warning"

METRIC_TOOL_CALLS: Final = "tether.tool.calls"
METRIC_TOOL_ERRORS: Final = "tether.tool.errors"
METRIC_CACHE_HIT_RATIO: Final = "tether.cache.hit_ratio"
