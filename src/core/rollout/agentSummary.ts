// Moved to the store layer, so OTLP import can summarise rollouts too.
export { summariseAgents } from '../store/agentSummary';
