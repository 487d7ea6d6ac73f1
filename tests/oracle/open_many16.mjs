// pi 1.6.0's SessionManager as judge for many files in one process (the mutation test):
// argv[2] is a JSON file holding a list of session files; prints, per file, pi's entries,
// buildSessionContext at the leaf and the tree (each entry's children and label), or the error.
const { SessionManager } = await import("@earendil-works/pi-coding-agent");

function flatTree(roots) {
	const out = [];
	const stack = [...roots].reverse();
	while (stack.length) {
		const node = stack.pop();
		out.push({ id: node.entry.id, children: node.children.map((c) => c.entry.id), label: node.label ?? null });
		for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
	}
	return out;
}

const fs = await import("node:fs");
const out = [];
for (const file of JSON.parse(fs.readFileSync(process.argv[2], "utf8"))) {
	let res;
	try {
		const sm = SessionManager.open(file);
		const ctx = sm.buildSessionContext();
		res = {
			entries: sm.getEntries().map((e) => e.id),
			leafId: sm.getLeafId(),
			messages: ctx.messages,
			thinkingLevel: ctx.thinkingLevel,
			model: ctx.model,
			tree: flatTree(sm.getTree()),
		};
		res.entryObjects = sm.getEntries();
	} catch (e) {
		res = { error: String(e && e.message ? e.message : e) };
	}
	out.push(res);
}
// JSON.stringify recurses and runs out of stack on values nested thousands deep, which pi
// reads and holds: those are written by an explicit stack instead
function stringify(value) {
	try {
		return JSON.stringify(value);
	} catch {
		class Raw {
			constructor(text) {
				this.text = text;
			}
		}
		const parts = [];
		const todo = [value];
		while (todo.length) {
			const v = todo.pop();
			if (v instanceof Raw) parts.push(v.text);
			else if (Array.isArray(v)) {
				todo.push(new Raw("]"));
				for (let i = v.length - 1; i >= 0; i--) todo.push(v[i] === undefined ? null : v[i], ...(i ? [new Raw(",")] : []));
				todo.push(new Raw("["));
			} else if (v !== null && typeof v === "object") {
				const keys = Object.keys(v).filter((k) => v[k] !== undefined && typeof v[k] !== "function");
				todo.push(new Raw("}"));
				for (let i = keys.length - 1; i >= 0; i--) todo.push(v[keys[i]], new Raw(`${i ? "," : ""}${JSON.stringify(keys[i])}:`));
				todo.push(new Raw("{"));
			} else parts.push(JSON.stringify(v) ?? "null");
		}
		return parts.join("");
	}
}
process.stdout.write(stringify(out));
