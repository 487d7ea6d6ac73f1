// pi 1.6.0's AgentSession.getSessionStats for a session file, as JSON on stdout (node >= 22.19).
// Usage: node tests/oracle/stats16.mjs SESSION_FILE CASES_JSON, CASES_JSON: [[leafId|null, modelId|null], ...]
// pi's own getSessionStats/getContextUsage run on an opened SessionManager (at the leaf when
// given) with the model whose context window counts: modelId from pi-ai's Anthropic catalogue
// (default: the branch's model when the catalogue has it, else claude-sonnet-4-5).
// Each answer also holds `branch`: the same method over a manager that holds only root → leaf.
process.env.HOME = process.env.HOME || "/home/oracle";
const { SessionManager, AgentSession } = await import("@earendil-works/pi-coding-agent");
const { ANTHROPIC_MODELS } = await import("@earendil-works/pi-ai/providers/anthropic.models");

const [file, casesJson] = process.argv.slice(2);

function stats(sm, manager, model) {
	// getSessionStats reads only these members of the session
	const self = Object.create(AgentSession.prototype, {
		sessionManager: { value: manager },
		sessionFile: { value: sm.getSessionFile() },
		sessionId: { value: sm.getSessionId() },
	});
	self._limitsModel = () => model;
	return self.getSessionStats();
}

const out = [];
for (const [leaf, modelArg] of JSON.parse(casesJson)) {
	const sm = SessionManager.open(file);
	if (leaf) sm.branch(leaf);
	const ctx = sm.buildSessionContext();
	const sessionModel = ctx.model?.provider === "anthropic" ? ctx.model.modelId : undefined;
	const modelId = modelArg || (sessionModel && ANTHROPIC_MODELS[sessionModel] ? sessionModel : "claude-sonnet-4-5");
	const model = ANTHROPIC_MODELS[modelId];
	const whole = stats(sm, sm, model);
	const branch = stats(sm, {
		getEntries: () => sm.getBranch(),
		getBranch: () => sm.getBranch(),
		buildSessionProjection: () => sm.buildSessionProjection(),
	}, model);
	out.push({ ...whole, branch });
}
process.stdout.write(JSON.stringify(out));
