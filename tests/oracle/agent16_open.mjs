// pi 1.6.0's SessionManager as judge of a file the server wrote (node >= 22.19).
// Usage: node tests/oracle/agent16_open.mjs SESSION_FILE
// Prints {entries, types, leafId, messages}: every loaded entry's kind (a message's role), the
// leaf pi opens at, and buildSessionContext there.
process.env.HOME = process.env.HOME || "/home/oracle";
const { SessionManager } = await import("@earendil-works/pi-coding-agent");

const sm = SessionManager.open(process.argv[2]);
const entries = sm.getEntries();
process.stdout.write(
	JSON.stringify({
		entries: entries.length,
		types: entries.map((e) => (e.type === "message" ? e.message.role : e.type)),
		leafId: sm.getLeafId(),
		messages: sm.buildSessionContext().messages,
	}),
);
