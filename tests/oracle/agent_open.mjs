// pi's SessionManager as judge. `agent_open.mjs FILE`: open it (entry count, buildSessionContext,
// convertToLlm). `agent_open.mjs --new CWD`: where and how SessionManager.create would start a session.
import { SessionManager, convertToLlm } from "@mariozechner/pi-coding-agent";

if (process.argv[2] === "--new") {
  const sm = SessionManager.create(process.argv[3]);
  const file = sm.getSessionFile();
  console.log(JSON.stringify({ dir: sm.getSessionDir(), file, header: sm.getHeader() }));
} else {
  const sm = SessionManager.open(process.argv[2]);
  const ctx = sm.buildSessionContext();
  console.log(
    JSON.stringify({
      entries: sm.getEntries().length,
      messages: ctx.messages,
      llm: convertToLlm(ctx.messages),
      model: ctx.model ?? null,
      thinkingLevel: ctx.thinkingLevel,
    }),
  );
}
