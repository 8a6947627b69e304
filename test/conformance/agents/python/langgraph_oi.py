"""The support ticket as a LangGraph (Python) graph: a node named after the lab's agent, Support, calling ChatOpenAI
with the tool bound, and a ToolNode; traced by OpenInference's LangChain instrumentation. rollout_lab_agent reads
the task, points ChatOpenAI at Support's gateway URL, exports the spans and prints the answer."""

import json
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from openinference.instrumentation.langchain import LangChainInstrumentor

import rollout_lab_agent as lab

run = lab.setup(agent="Support")
LangChainInstrumentor().instrument()


@tool
def lookup_customer(id: str) -> str:  # noqa: A002 (the tool's argument is named id)
    """Look a customer up by id."""
    return json.dumps({"id": id, "plan": "pro", "status": "locked"})


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


# OpenInference sends no trace context over HTTP: the helper's httpx client does, so the gateway can tell which span made each call.
model = ChatOpenAI(model="served-model", base_url=run.base_url(), api_key="rollout-lab-gateway", temperature=0, http_client=run.http_client()).bind_tools([lookup_customer])
system = SystemMessage(run.prompt("Support", "You triage support tickets."))


def support(state: State) -> dict:
    return {"messages": [model.invoke([system, *state["messages"]])]}


graph = StateGraph(State)
graph.add_node("Support", support)
graph.add_node("tools", ToolNode([lookup_customer]))
graph.add_edge(START, "Support")
graph.add_conditional_edges("Support", tools_condition)
graph.add_edge("tools", "Support")
app = graph.compile()
state = app.invoke({"messages": [("user", run.task["goal"])]}, {"recursion_limit": 8})
run.finish(state["messages"][-1].content)
