// A test stand-in for a person using pi's own /tree: `/test-goto <entry id>` moves pi's leaf
// there with pi's navigateTree (no summary), as the tree selector does.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("test-goto", {
		description: "move pi's leaf (test)",
		handler: async (args, ctx) => {
			await ctx.navigateTree(args.trim(), { summarize: false });
		},
	});
}
