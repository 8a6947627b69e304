"""The support ticket with the standard library alone: chat completions through the gateway (rollout_lab_agent's
client), GenAI spans written by the agent (invoke_agent Support, execute_tool lookup_customer with the call's id)."""

import json

import rollout_lab_agent as lab

TOOLS = [{"type": "function", "function": {"name": "lookup_customer", "description": "Look a customer up by id.", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}]


def lookup_customer(customer_id):
    return {"id": customer_id, "plan": "pro", "status": "locked"}


run = lab.setup(agent="Support")
messages = [{"role": "system", "content": run.prompt("Support", "You triage support tickets.")}, {"role": "user", "content": run.task["goal"]}]
with run.agent_span():
    for _ in range(4):
        message = run.chat(messages, tools=TOOLS)["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            break
        messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            with run.tool_span(call["function"]["name"], args, call_id=call["id"]) as tool:
                tool.result = lookup_customer(args["id"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(tool.result)})
run.finish(message.get("content") or "")
