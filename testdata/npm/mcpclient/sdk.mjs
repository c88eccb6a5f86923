// sdk.mjs drives the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in ../package.json) through a plan and
// prints what happened as one JSON document on stdout, for Go tests to
// assert (internal/mcpserver/clients_test.go). It lives under testdata/npm so that
// Node's ESM resolution finds the pinned packages in ../node_modules.
//
// The plan is JSON on stdin:
//
//   {"url": "http://127.0.0.1:PORT/mcp",      // or .../sse with "transport": "sse"
//    "transport": "http" | "sse",
//    "apiKey": "k",                            // sent as Authorization: Bearer k
//    "headers": {"X-Antler-Thread-Id": "t1"},  // more request headers
//    "protocolVersion": "2025-03-26",          // optional: offered instead of the SDK's latest
//    "elicitation": {"action": "accept", "content": {...}},  // how to answer elicitation/create
//    "sampling": {"text": "..."},              // how to answer sampling/createMessage
//    "capabilities": {"sampling": {}},         // optional: declared instead of elicitation and sampling
//    "steps": [{"op": "listTools"}, {"op": "callTool", "name": "x", "arguments": {}, "progress": true},
//              {"op": "listResources"}, {"op": "readResource", "uri": "test://x"},
//              {"op": "listPrompts"}, {"op": "getPrompt", "name": "p", "arguments": {}},
//              {"op": "setLevel", "level": "info"},
//              {"op": "callToolAbortOnLog", "name": "x", "arguments": {}},  // aborted at its first log message
//              {"op": "callToolTask", "name": "x", "arguments": {}, "ttl": 60000}]}
//
// callToolTask calls the tool as a 2025-11-25 task with the SDK's
// experimental callToolStream (tasks/get polls, then tasks/result, on whose
// stream a task's elicitation/create arrives); its result is the stream's
// messages, [{"type", "status"?, "taskId"?, "result"?, "error"?}].
//
// The output:
//
//   {"protocolVersion": "<negotiated>", "serverInfo": {...}, "capabilities": {...},
//    "steps": [{"op": "...", "result": {...}} | {"op": "...", "error": "..."}, with "progress": [...] for callTool],
//    "elicitations": [<params of each elicitation/create>], "samplings": [<params of each sampling/createMessage>]}
//
// A step that fails records its error and the plan goes on; a connection
// that fails prints {"connectError": "...", "connectCode": <HTTP status, when the SDK has one>}. The exit status is 0 either
// way, and 2 for a plan that cannot be read.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

// OfferedVersion wraps a transport so that the initialize request offers
// version instead of the SDK's LATEST_PROTOCOL_VERSION (the Client has no
// option for it), and records the version the server answered with.
class OfferedVersion {
  constructor(inner, version) {
    this.inner = inner;
    this.version = version;
    this.negotiated = undefined;
    this.initID = undefined;
    this.sends = []; // the notifications/cancelled sent, until they are delivered
  }
  get sessionId() { return this.inner.sessionId; }
  set onmessage(fn) {
    this.inner.onmessage = (msg, extra) => {
      if (msg.id !== undefined && msg.id === this.initID && msg.result) {
        this.negotiated = msg.result.protocolVersion;
      }
      fn(msg, extra);
    };
  }
  set onclose(fn) { this.inner.onclose = fn; }
  set onerror(fn) { this.inner.onerror = fn; }
  start() { return this.inner.start(); }
  close() { return this.inner.close(); }
  send(msg, opts) {
    if (msg.method === 'initialize') {
      this.initID = msg.id;
      if (this.version) {
        msg = { ...msg, params: { ...msg.params, protocolVersion: this.version } };
      }
    }
    const sent = this.inner.send(msg, opts);
    if (msg.method === 'notifications/cancelled') this.sends.push(sent.catch(() => {}));
    return sent;
  }
  // delivered waits for the notifications/cancelled sent so far.
  async delivered() { await Promise.all(this.sends.splice(0)); }
  setProtocolVersion(v) { this.inner.setProtocolVersion?.(v); }
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

function transportFor(plan) {
  const headers = { ...(plan.headers ?? {}) };
  if (plan.apiKey) headers.Authorization = `Bearer ${plan.apiKey}`;
  const url = new URL(plan.url);
  const requestInit = { headers };
  switch (plan.transport ?? 'http') {
    case 'http':
      return new StreamableHTTPClientTransport(url, { requestInit });
    case 'sse':
      return new SSEClientTransport(url, { requestInit });
    default:
      throw new Error(`unknown transport ${plan.transport}`);
  }
}

// onLog runs at each notifications/message the client gets.
let onLog = () => {};

async function runStep(client, transport, step) {
  switch (step.op) {
    case 'listTools':
      return { result: await client.listTools() };
    case 'callTool': {
      const progress = [];
      const opts = step.progress ? { onprogress: (p) => progress.push(p) } : {};
      const result = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, opts);
      return step.progress ? { result, progress } : { result };
    }
    case 'listResources':
      return { result: await client.listResources() };
    case 'readResource':
      return { result: await client.readResource({ uri: step.uri }) };
    case 'listPrompts':
      return { result: await client.listPrompts() };
    case 'getPrompt':
      return { result: await client.getPrompt({ name: step.name, arguments: step.arguments ?? {} }) };
    case 'callToolTask': {
      const messages = [];
      const stream = client.experimental.tasks.callToolStream({ name: step.name, arguments: step.arguments ?? {} },
        CallToolResultSchema, { task: { ttl: step.ttl ?? 60000 } });
      for await (const m of stream) {
        messages.push({ type: m.type, taskId: m.task?.taskId, status: m.task?.status, result: m.result,
          error: m.error ? String(m.error?.message ?? m.error) : undefined });
      }
      return { result: messages };
    }
    case 'setLevel':
      return { result: await client.setLoggingLevel(step.level) };
    case 'callToolAbortOnLog': {
      // The SDK sends notifications/cancelled when a request's signal aborts.
      const abort = new AbortController();
      onLog = () => abort.abort('cancelled by the plan');
      try {
        return { result: await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, { signal: abort.signal }) };
      } finally {
        onLog = () => {};
        await transport.delivered(); // before the plan goes on (and closes)
      }
    }
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

async function main() {
  let plan;
  try {
    plan = JSON.parse(await readStdin());
  } catch (err) {
    process.stderr.write(`sdk.mjs: read the plan: ${err.message}\n`);
    process.exit(2);
  }
  const out = { steps: [], elicitations: [], samplings: [] };
  const capabilities = plan.capabilities ?? { elicitation: {}, sampling: {} };
  const client = new Client({ name: 'antler-sdk-test', version: '1.0.0' }, { capabilities });
  // The SDK refuses a handler for a capability the client did not declare.
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      out.elicitations.push(req.params);
      return plan.elicitation ?? { action: 'decline' };
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      out.samplings.push(req.params);
      return { role: 'assistant', model: 'antler-test', content: { type: 'text', text: plan.sampling?.text ?? '' } };
    });
  }
  client.setNotificationHandler(LoggingMessageNotificationSchema, () => onLog());
  const transport = new OfferedVersion(transportFor(plan), plan.protocolVersion);
  try {
    await client.connect(transport);
  } catch (err) {
    // The SDK's HTTP errors carry the response status as code.
    process.stdout.write(JSON.stringify({ connectError: String(err?.message ?? err), connectCode: err?.code }) + '\n');
    return;
  }
  out.protocolVersion = transport.negotiated;
  out.serverInfo = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();
  for (const step of plan.steps ?? []) {
    try {
      out.steps.push({ op: step.op, ...(await runStep(client, transport, step)) });
    } catch (err) {
      out.steps.push({ op: step.op, error: String(err?.message ?? err) });
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

await main();
