"""Write a Rollout Lab command agent in Python.

    import rollout_lab_agent as lab

    run = lab.setup(agent="Support")           # the task from stdin; OPENAI_BASE_URL and OTLP wired
    with run.agent_span():
        answer = run.chat([{"role": "user", "content": run.task["goal"]}])
        run.emit_reward(0.1, "answered")       # an intermediate reward, on the current span
    run.finish(answer["choices"][0]["message"]["content"])   # the last JSON line on stdout
"""

from .gateway_client import GatewayCallError, chat_completion
from .lab_env import LabEnvironment, LabEnvironmentError, lab_environment
from .rollout import Rollout, ToolSpan, current, emit_reward, setup
from .task_io import TaskInputError, final_output_line, read_task, write_output

__all__ = [
    "GatewayCallError",
    "LabEnvironment",
    "LabEnvironmentError",
    "Rollout",
    "TaskInputError",
    "ToolSpan",
    "chat_completion",
    "current",
    "emit_reward",
    "final_output_line",
    "lab_environment",
    "read_task",
    "setup",
    "write_output",
]
