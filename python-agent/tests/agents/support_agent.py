"""The agent the tests run as the lab would: one agent span, a chat call through the gateway, a tool, two rewards."""

import sys

import rollout_lab_agent as lab

run = lab.setup(agent="Support", service_name="support-test")
print("a log line before the final output", flush=True)
with run.agent_span():
    answer = run.chat([{"role": "system", "content": run.prompt("Support", "You triage tickets.")}, {"role": "user", "content": run.task["goal"]}])
    with run.tool_span("lookup_customer", {"id": "C-17"}, call_id="call_1") as tool:
        tool.result = {"id": "C-17", "plan": "pro"}
        lab.emit_reward(0.25, "found_customer", explanation="C-17 exists")
    with run.tool_span("escalate", {"why": "locked"}) as failing:
        failing.fail("no on-call engineer")
    run.emit_reward(1, "answered")
if "--reward-outside" in sys.argv:
    lab.emit_reward(-0.5, "late", agent="Reviewer")
run.finish({"queue": answer["choices"][0]["message"]["content"]}, decision="tech", turns=1, note="extra field")
