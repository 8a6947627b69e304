"""The parts of `rollout_trainer serve`: the OpenAI wire format (protocol), tool calls in
generated text (toolcalls), generation with the in-process policy (local), the served
versions and the control API (control), the optional vLLM engine (vllm) and the HTTP
front (http). rollout_trainer.serve puts them together and runs the job."""
