"""The support ticket with the OpenAI Agents SDK (Python): an Agent named after the lab's agent, Support, with a
function tool, on the chat-completions model against Support's gateway URL; traced by OpenInference's OpenAI
Agents instrumentation (which replaces the SDK's own exporter to OpenAI)."""

import json

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

import rollout_lab_agent as lab

run = lab.setup(agent="Support")
OpenAIAgentsInstrumentor().instrument()


@function_tool
def lookup_customer(id: str) -> str:  # noqa: A002 (the tool's argument is named id)
    """Look a customer up by id."""
    return json.dumps({"id": id, "plan": "pro", "status": "locked"})


# OpenInference sends no trace context over HTTP: the helper's httpx client does, so the gateway can tell which span made each call.
client = AsyncOpenAI(base_url=run.base_url(), api_key="rollout-lab-gateway", http_client=run.http_client(asynchronous=True))
agent = Agent(
    name="Support",
    instructions=run.prompt("Support", "You triage support tickets."),
    tools=[lookup_customer],
    model=OpenAIChatCompletionsModel(model="served-model", openai_client=client),
)
result = Runner.run_sync(agent, run.task["goal"], max_turns=4)
run.finish(str(result.final_output))
