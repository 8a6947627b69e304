#!/usr/bin/env python3
"""A command agent in Python on the lab's helper package, rollout_lab_agent (python-agent/ in the Rollout Lab
repository: `pip install ./python-agent`; it needs nothing but the standard library).

Rollout Lab starts it once per rollout. `lab.setup()` reads the task from standard input and wires the rollout:
model calls go through the lab's recording gateway (each agent on its own URL, so every call is recorded as that
agent's, with token ids and logprobs when the model returns them) and spans go to the lab's OTLP receiver.
`run.finish()` prints the final output as the lab reads it.

Two agents: the Router names the ticket's queue, then checks it with a local tool (normalize_queue, an
execute_tool span the lab's AIR rules score); the Responder writes the customer a one-line acknowledgement and
rewards itself when the reply names the queue (an intermediate reward sent from inside the agent).
"""

import sys

try:
    import rollout_lab_agent as lab
except ImportError:
    sys.exit("this agent needs the rollout_lab_agent package: pip install ./python-agent from a Rollout Lab clone (or put that folder on PYTHONPATH)")

QUEUES = ("bill", "ship", "tech", "user")
DEFAULT_PROMPTS = {
    "Router": "You route support tickets. Answer with one word: bill, ship, tech or user.",
    "Responder": "You acknowledge support tickets in one short sentence that names the queue.",
}


def normalize_queue(answer):
    """The tool: the queue named in the Router's answer, or None."""
    words = [w.strip(".,:;!\"'").lower() for w in answer.split()]
    return next((w for w in words if w in QUEUES), None)


def reply_of(answer):
    return answer["choices"][0]["message"].get("content") or ""


def main():
    run = lab.setup(service_name="ticket-agent-python")
    ticket = run.task["goal"]

    with run.agent_span("Router"):
        answer = reply_of(run.chat([{"role": "system", "content": run.prompt("Router", DEFAULT_PROMPTS["Router"])}, {"role": "user", "content": ticket}], agent="Router"))
        with run.tool_span("normalize_queue", {"answer": answer}) as tool:
            queue = normalize_queue(answer)
            tool.result = {"queue": queue}
            if queue is None:
                tool.fail("no queue named")
    if queue is None:
        run.fail(f"no queue in the answer {answer!r}", agent="Router")

    with run.agent_span("Responder"):
        messages = [{"role": "system", "content": run.prompt("Responder", DEFAULT_PROMPTS["Responder"])}, {"role": "user", "content": f"{ticket}\nQueue: {queue or 'unknown'}"}]
        reply = reply_of(run.chat(messages, agent="Responder"))
        run.emit_reward(0.05 if queue and queue in reply.lower() else 0.0, "reply_names_queue")

    run.finish(queue, decision=queue, turns=2, reply=reply)


if __name__ == "__main__":
    main()
