// langchain.mjs loads an MCP server's tools through LangChain's
// MultiServerMCPClient (@langchain/mcp-adapters, pinned in ../package.json),
// invokes some of them, and prints what happened as one JSON document on
// stdout, for Go tests to assert (internal/mcpserver/clients_test.go).
//
// The plan is JSON on stdin:
//
//   {"url": "http://127.0.0.1:PORT/mcp", "apiKey": "k", "headers": {...},
//    "invoke": [{"name": "stdio_echo", "arguments": {"message": "hi"}}]}
//
// The output:
//
//   {"tools": [{"name": "...", "description": "..."}],
//    "invoke": [{"name": "...", "result": <what tool.invoke returned>} | {"name": "...", "error": "..."}]}
//
// or {"loadError": "..."} when the tools cannot be loaded. The exit status is
// 0 either way, and 2 for a plan that cannot be read.
import { MultiServerMCPClient } from '@langchain/mcp-adapters';

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

async function main() {
  let plan;
  try {
    plan = JSON.parse(await readStdin());
  } catch (err) {
    process.stderr.write(`langchain.mjs: read the plan: ${err.message}\n`);
    process.exit(2);
  }
  const headers = { ...(plan.headers ?? {}) };
  if (plan.apiKey) headers.Authorization = `Bearer ${plan.apiKey}`;
  const client = new MultiServerMCPClient({
    throwOnLoadError: true,
    mcpServers: { antler: { transport: 'http', url: plan.url, headers } },
  });
  const out = { tools: [], invoke: [] };
  let tools;
  try {
    tools = await client.getTools();
  } catch (err) {
    await client.close().catch(() => {});
    process.stdout.write(JSON.stringify({ loadError: String(err?.message ?? err) }) + '\n');
    return;
  }
  out.tools = tools.map((t) => ({ name: t.name, description: t.description }));
  for (const call of plan.invoke ?? []) {
    const tool = tools.find((t) => t.name === call.name);
    if (!tool) {
      out.invoke.push({ name: call.name, error: 'no such tool loaded' });
      continue;
    }
    try {
      out.invoke.push({ name: call.name, result: await tool.invoke(call.arguments ?? {}) });
    } catch (err) {
      out.invoke.push({ name: call.name, error: String(err?.message ?? err) });
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

await main();
