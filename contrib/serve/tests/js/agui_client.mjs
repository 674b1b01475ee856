// Runs an agent through tether serve's AG-UI endpoint with @ag-ui/client's HttpAgent
// and prints the events it received, in order, as one JSON array.
// Usage: node agui_client.mjs URL [KEY] [PROMPT]
import { HttpAgent } from "@ag-ui/client";

const [url, key, prompt = "What is the weather in Paris?"] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  headers: key ? { Authorization: `Bearer ${key}` } : {},
  threadId: "agui-thread",
});
agent.messages = [{ id: "u1", role: "user", content: prompt }];
const events = [];
await agent.runAgent(
  { runId: "agui-run-1" },
  {
    onEvent({ event }) {
      events.push(event);
    },
  },
);
process.stdout.write(JSON.stringify({ events, messages: agent.messages }));
