"""The support ticket with the OpenAI Python client, traced by OpenTelemetry's own OpenAI instrumentation
(opentelemetry-instrumentation-openai-v2); the tool and the agent's step are GenAI spans from rollout_lab_agent."""

import json

from openai import OpenAI
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

import rollout_lab_agent as lab

TOOLS = [{"type": "function", "function": {"name": "lookup_customer", "description": "Look a customer up by id.", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}]

run = lab.setup(agent="Support")
OpenAIInstrumentor().instrument()
# OPENAI_BASE_URL is Support's own gateway URL now (setup did it). The instrumentation sends no trace context over
# HTTP: the helper's httpx client does, so the gateway can tell which span made each call.
client = OpenAI(http_client=run.http_client())
messages = [{"role": "system", "content": run.prompt("Support", "You triage support tickets.")}, {"role": "user", "content": run.task["goal"]}]
with run.agent_span():
    for _ in range(4):
        message = client.chat.completions.create(model="served-model", messages=messages, tools=TOOLS).choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            with run.tool_span(call.function.name, args, call_id=call.id) as tool:
                tool.result = {"id": args["id"], "plan": "pro", "status": "locked"}
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(tool.result)})
run.finish(message.content or "")
