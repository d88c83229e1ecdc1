// The official `openai` npm package driving the gateway's OpenAI-compatible endpoint
// (tests/e2e/test_e2e_openai_compat.py, R-ECO-4). Reads {url, token} as JSON on stdin; prints what it saw as JSON.
import OpenAI from "openai";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { url, token } = JSON.parse(input);
const sdk = (apiKey) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 30_000 });
const client = sdk(token);

const models = [];
for await (const model of client.models.list()) models.push(model.id);

const { data: completion, response } = await client.chat.completions
  .create({ model: "zeroclaw/default", messages: [{ role: "user", content: "hello npm" }] })
  .withResponse();
const sessionId = response.headers.get("x-zeroclaw-session");

const stream = await client.chat.completions.create(
  {
    model: "zeroclaw/default",
    messages: [{ role: "user", content: "/stream 12" }],
    stream: true,
    stream_options: { include_usage: true },
  },
  { headers: { "X-Zeroclaw-Session": sessionId } },
);
const chunks = [];
for await (const chunk of stream) chunks.push(chunk);

// Errors come back as the SDK's own classes: it maps OpenAI's status and {error:{message, type, code}}.
async function failure(call) {
  try {
    await call();
    return null;
  } catch (error) {
    return { class: error.constructor.name, status: error.status, code: error.code, type: error.type };
  }
}
const unknownModel = await failure(() =>
  client.chat.completions.create({ model: "zeroclaw/nope", messages: [{ role: "user", content: "x" }] }),
);
const badToken = await failure(() =>
  sdk("zc_not_a_token").chat.completions.create({
    model: "zeroclaw/default",
    messages: [{ role: "user", content: "x" }],
  }),
);

process.stdout.write(
  JSON.stringify({
    models,
    sessionId,
    answer: completion.choices[0].message.content,
    finish: completion.choices[0].finish_reason,
    usage: completion.usage,
    streamed: chunks.map((c) => ({
      text: c.choices[0]?.delta?.content ?? null,
      finish: c.choices[0]?.finish_reason ?? null,
      usage: c.usage ?? null,
    })),
    unknownModel,
    badToken,
  }),
);
