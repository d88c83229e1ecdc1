// The npm ACP SDK's own client (`@agentclientprotocol/sdk`, v1) driving the gateway's `/acp` over WebSocket
// (tests/e2e/test_e2e_acp_gateway.py). Reads {url, token, via, cwd} as JSON on stdin; prints what it saw as JSON.
// Every message is parsed by the SDK's generated schemas before a handler sees it.
import { client, methods } from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import WebSocket from "ws";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let input = "";
for await (const chunk of process.stdin) input += chunk;
const payload = JSON.parse(input);

const updates = [];
const permissions = [];
const answers = ["allow_once", "reject_once"];
let withdrawn = 0;

const app = client({ name: "zeroclaw-acp-ws-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
    permissions.push(params.toolCall.toolCallId);
    if (answers.length > 0) return { outcome: { outcome: "selected", optionId: answers.shift() } };
    // Left pending until the agent withdraws it ($/cancel_request aborts this handler's signal).
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    withdrawn += 1;
    return { outcome: { outcome: "cancelled" } };
  });

const options = { WebSocket, protocols: ["zeroclaw.acp.v1"], headers: {} };
let url = payload.url;
if (payload.via === "header") options.headers.Authorization = `Bearer ${payload.token}`;
if (payload.via === "subprotocol") options.protocols.push(`bearer.${payload.token}`);
if (payload.via === "query") url += `?token=${encodeURIComponent(payload.token)}`;

const result = await app.connectWith(createWebSocketStream(url, options), async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const created = await ctx.request(methods.agent.session.new, { cwd: payload.cwd, mcpServers: [] });
  const sessionId = created.sessionId;
  const prompt = (text) =>
    ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  const stops = [];
  stops.push((await prompt("hello")).stopReason);
  stops.push((await prompt("/bash echo yes")).stopReason);
  stops.push((await prompt("/bash echo no")).stopReason);
  const pending = prompt("/bash echo never");
  while (permissions.length < 3) await sleep(20);
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  stops.push((await pending).stopReason);
  const sleeping = prompt("/sleep 20");
  while (!updates.some((u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content.text === "."))
    await sleep(20);
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  stops.push((await sleeping).stopReason);
  stops.push((await prompt("after")).stopReason);
  return { init, sessionId, configOptions: created.configOptions, stops };
});

const kinds = updates.map((u) => u.update.sessionUpdate);
const results = updates.filter((u) => u.update.sessionUpdate === "tool_call_update").map((u) => u.update.status);
const text = updates
  .filter((u) => u.update.sessionUpdate === "agent_message_chunk")
  .map((u) => u.update.content.text)
  .join("");
console.log(JSON.stringify({ ...result, kinds, results, text, permissions, withdrawn }));
process.exit(0);
