"""The OpenTelemetry GenAI names huddle writes, and which provider a model belongs to.

Followed: the GenAI semantic conventions (status Development) as kept in the
open-telemetry/semantic-conventions-genai repository (unreleased main, 2026), which
carried over unchanged the names of semantic-conventions v1.41; core semconv 1.42+
marks them "moved there" (opentelemetry-semantic-conventions 0.66b2). Spans:
`invoke_agent {gen_ai.agent.name}` (INTERNAL), `chat {gen_ai.request.model}` (CLIENT),
`execute_tool {gen_ai.tool.name}` (INTERNAL).

Names are plain strings here (not imported from the semconv package) so that building
spans needs no OpenTelemetry install; only sending does.
"""

from __future__ import annotations

SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
CONVERSATION = "gen_ai.conversation.id"
AGENT_ID = "gen_ai.agent.id"
AGENT_NAME = "gen_ai.agent.name"
AGENT_DESCRIPTION = "gen_ai.agent.description"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

# The token trap: OTel's input_tokens INCLUDES cached input (read and written), which
# are parts of it; huddle's `input` is net of cache. See plan.usage_attributes.
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
CACHE_CREATION_1H = "huddle.usage.cache_creation_1h.input_tokens"  # part of CACHE_CREATION (Claude)

INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"


# A source's provider when the model name does not tell (no model recorded).
SOURCE_PROVIDER = {"claude": "anthropic", "codex": "openai", "vibe": "mistral_ai", "gemini": "gcp.gemini"}

# Well-known gen_ai.provider.name values, by what a model id starts with.
_MODEL_PREFIX = (
    ("claude", "anthropic"),
    ("gpt-", "openai"),
    ("gpt5", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("codex", "openai"),
    ("chatgpt", "openai"),
    ("mistral", "mistral_ai"),
    ("devstral", "mistral_ai"),
    ("codestral", "mistral_ai"),
    ("magistral", "mistral_ai"),
    ("ministral", "mistral_ai"),
    ("pixtral", "mistral_ai"),
    ("gemini", "gcp.gemini"),
    ("gemma", "gcp.gemini"),
    ("grok", "x_ai"),
    ("deepseek", "deepseek"),
    ("command", "cohere"),
    ("kimi", "moonshot_ai"),
    ("moonshot", "moonshot_ai"),
    ("sonar", "perplexity"),
)
# A "provider/model" id (OpenCode, OpenRouter): the part before the slash, when known.
_PROVIDER_PREFIX = {
    "anthropic": "anthropic",
    "openai": "openai",
    "mistral": "mistral_ai",
    "mistralai": "mistral_ai",
    "google": "gcp.gemini",
    "gemini": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "vertex": "gcp.vertex_ai",
    "amazon-bedrock": "aws.bedrock",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "xai": "x_ai",
    "x-ai": "x_ai",
    "deepseek": "deepseek",
    "groq": "groq",
    "cohere": "cohere",
    "perplexity": "perplexity",
    "moonshotai": "moonshot_ai",
}


def provider_of(model: str, source: str) -> str:
    """gen_ai.provider.name for a model a source recorded: from the id's provider
    prefix or its family name, else the source's own provider, else the source name
    (a custom value, as the conventions allow)."""
    m = model.strip().lower()
    if "/" in m:
        head, m = m.split("/", 1)
        if head in _PROVIDER_PREFIX:
            return _PROVIDER_PREFIX[head]
        m = m.rsplit("/", 1)[-1]
    for prefix in ("anthropic.", "us.anthropic.", "eu.anthropic."):
        if m.startswith(prefix):
            return "aws.bedrock"
    for prefix, provider in _MODEL_PREFIX:
        if m.startswith(prefix):
            return provider
    return SOURCE_PROVIDER.get(source, source or "_OTHER")


def product_of(source: str) -> str:
    from huddle.sources.registry import display  # (the one table of agent names)

    return display(source)["label"]
