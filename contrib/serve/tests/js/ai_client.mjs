// Consumes tether serve's UI message stream with the `ai` package: DefaultChatTransport
// sends the chat, readUIMessageStream reassembles the assistant message.
// Prints {message, chunks}. Usage: node ai_client.mjs URL [KEY] [PROMPT]
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, key, prompt = "What is the weather in Paris?"] = process.argv.slice(2);
const transport = new DefaultChatTransport({
  api: url,
  headers: key ? { Authorization: `Bearer ${key}` } : {},
});
const stream = await transport.sendMessages({
  chatId: "ai-chat",
  messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: prompt }] }],
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: undefined,
});
const [forMessages, forChunks] = stream.tee();
const chunks = [];
const collecting = (async () => {
  const reader = forChunks.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
})();
let message;
for await (const snapshot of readUIMessageStream({ stream: forMessages })) {
  message = snapshot;
}
await collecting;
process.stdout.write(JSON.stringify({ message, chunks }));
