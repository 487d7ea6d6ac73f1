-- Pure modules: drawing rows, picker items, relative times, JSON.
local H = require("helpers")
local render = require("pi_sessions.render")
local sessions = require("pi_sessions.sessions")
local util = require("pi_sessions.util")

return {
  { "a row's prefix follows pi's drawing rules", function()
    H.eq("", render.prefix({ indent = 0, connector = "", gutters = {} }))
    H.eq("├⊟ ", render.prefix({ indent = 1, connector = "├─", gutters = {}, foldable = true }))
    H.eq("└─ ", render.prefix({ indent = 1, connector = "└─", gutters = {} }))
    H.eq("│     ", render.prefix({ indent = 2, connector = "", gutters = { { position = 0, show = true } } }))
    H.eq("   └⊞ ", render.prefix({ indent = 2, connector = "└─", gutters = { { position = 0, show = false } }, folded = true, foldable = true }))
    H.eq("⊞ ", render.prefix({ indent = 0, connector = "", gutters = {}, folded = true }))
  end },
  { "a row's line and highlights", function()
    local line, hls = render.row({ indent = 1, connector = "└─", gutters = {}, onActivePath = true, isLeaf = true, label = "done", title = "assistant: ok", type = "message", role = "assistant" })
    H.eq("└─ • [done] assistant: ok", line)
    local groups = {}
    for _, h in ipairs(hls) do
      groups[h[1]] = line:sub(h[2] + 1, h[3])
    end
    H.eq("└─ ", groups.PiTreeGutter)
    H.eq("[done]", groups.PiTreeLabel)
    H.eq("assistant: ok", groups.PiTreeLeaf)
    H.truthy(render.is_tool({ type = "message", role = "toolResult", title = "[read: x]" }))
    H.truthy(not render.is_tool({ type = "message", role = "user", title = "[read: x]" }))
    H.truthy(not render.is_tool({ type = "compaction", title = "[compaction: 18k tokens]" }))
  end },
  { "a live session's mark: in the header after the name, in the picker after the title", function()
    local live = { pid = 4242, leafId = "a1", streaming = false, model = "anthropic/claude-sonnet-4-5", thinkingLevel = "off" }
    H.eq("● live in pi · pid 4242 · idle", render.live(live))
    H.eq("● live in pi · pid 4242 · streaming", render.live(vim.tbl_extend("force", live, { streaming = true })))
    H.eq(nil, render.live(vim.NIL))
    H.eq("s │ ● live in pi · pid 4242 · idle │ filter: all │ 2 rows", render.header("s", "all", "", 2, nil, live))
    H.eq("s │ filter: all │ 2 rows", render.header("s", "all", "", 2, nil, nil))
    local info = { session = "/s/a.jsonl", cwd = "/p", modified = "2026-11-30T09:00:00.000Z", firstMessage = "hi", live = live }
    local item = sessions.items({ info })[1]
    H.truthy(item.text:find("^hi  ·  ● live in pi · pid 4242 · idle  ·  /p  ·  "), item.text)
    info.live = nil
    H.truthy(not sessions.items({ info })[1].text:find("live"), "no mark without pi")
  end },
  { "the header counts rows: 0 rows, 1 row, 2 rows", function()
    H.eq("s │ filter: all │ 0 rows", render.header("s", "all", "", 0))
    H.eq("s │ filter: default │ search: orm │ 1 row", render.header("s", "default", "orm", 1))
    H.eq("s │ filter: default │ 2 rows", render.header("s", "default", nil, 2))
  end },
  { "relative times", function()
    local t = util.parse_iso("2026-11-30T09:00:00.000Z")
    H.eq(os.time({ year = 2026, month = 11, day = 30, hour = 9, min = 0, sec = 0, isdst = false }) - (os.time() - os.time(os.date("!*t"))), t, "parse_iso is UTC")
    H.eq("just now", util.relative_time("2026-11-30T09:00:00.000Z", t + 30))
    H.eq("5m ago", util.relative_time("2026-11-30T09:00:00.000Z", t + 300))
    H.eq("3h ago", util.relative_time("2026-11-30T09:00:00.000Z", t + 3 * 3600 + 5))
    H.eq("2d ago", util.relative_time("2026-11-30T09:00:00.000Z", t + 2 * 86400))
  end },
  { "picker items put forks under their parent", function()
    local list = {
      { session = "/s/c.jsonl", cwd = "/w", modified = "2026-11-30T09:05:00.000Z", firstMessage = "third", parentSession = "/s/a.jsonl" },
      { session = "/s/b.jsonl", cwd = "/w", modified = "2026-11-30T09:04:00.000Z", name = "named" },
      { session = "/s/a.jsonl", cwd = "/w", modified = "2026-11-30T09:00:00.000Z", firstMessage = "first" },
      { session = "/s/d.jsonl", cwd = "/w", modified = "2026-11-30T09:00:00.000Z", firstMessage = "orphan fork", parentSession = "/gone.jsonl" },
    }
    local now = util.parse_iso("2026-11-30T09:10:00.000Z")
    local items = sessions.items(list, now)
    local texts = vim.tbl_map(function(i) return i.text end, items)
    H.eq({
      "named  ·  /w  ·  6m ago",
      "first  ·  /w  ·  10m ago",
      "  ↳ third  ·  /w  ·  5m ago",
      "orphan fork  ·  /w  ·  10m ago",
    }, texts)
  end },
  { "pretty JSON round-trips", function()
    local v = vim.json.decode('{"b":[1,{"x":null},[]],"a":{},"c":"é\\n","d":true}', { luanil = { object = true } })
    local s = util.json(v)
    H.eq(vim.json.decode(s, { luanil = { object = true } }), v)
    H.truthy(s:find('"a": {}', 1, true), "empty object kept")
    H.truthy(s:find('"a"') < s:find('"b"'), "keys sorted")
  end },
}
