-- The branch's tokens and cost: the sidebar header carries them and follows
-- a switch; :PiStats says them for the branch and the file. Numbers from the
-- real server's pi/getSessionStats.
local H = require("helpers")
local tree = require("pi_sessions.tree")
local stats = require("pi_sessions.stats")

local function header()
  return vim.api.nvim_buf_get_lines(tree.state.buf, 0, 1, false)[1]
end

return {
  { "numbers read short: tokens in k and M, cost in dollars, the context share", function()
    H.eq({ "950", "1.2k", "12k", "2.5M" }, vim.tbl_map(stats.compact, { 950, 1234, 12345, 2500000 }))
    local s = { tokens = { total = 1234 }, cost = 0.4219, contextUsage = { tokens = 90000, contextWindow = 200000, percent = 45 } }
    H.eq("1.2k tok $0.42 45% ctx", stats.short(s))
    s.contextUsage = { tokens = vim.NIL, contextWindow = 200000, percent = vim.NIL }
    s.cost = 0.0012
    H.eq("1.2k tok $0.0012", stats.short(s))
  end },
  { "the header holds the branch's tokens and cost before the row count, and follows a switch", function()
    local file = H.shop()
    H.open(file)
    local s = H.request("pi/getSessionStats", { session = file })
    H.truthy(s.branch.totalMessages < s.totalMessages, "the branch is part of the file")
    H.wait(function() return header():find(" │ " .. stats.short(s.branch) .. " │ ", 1, true) ~= nil end, "the stats in the header: " .. header())
    local row = H.truthy(H.row_where(function(r) return r.role == "assistant" and not r.onActivePath end), "a row off the path")
    H.cursor_to(row.id)
    H.answer_select(function(item) return item.key == "plain" end)
    H.press("<CR>")
    H.wait(function() return H.request("pi/getTree", { session = file, limit = 1 }).leafId == row.id end, "leaf moved")
    local s2 = H.request("pi/getSessionStats", { session = file })
    H.truthy(stats.short(s2.branch) ~= stats.short(s.branch), "another branch, other numbers")
    H.wait(function() return header():find(" │ " .. stats.short(s2.branch) .. " │ ", 1, true) ~= nil end, "the new branch's stats: " .. header())
  end },
  { ":PiStats says the branch's and the file's numbers", function()
    local file = H.shop()
    H.open(file)
    stats.last = nil
    vim.cmd("PiStats")
    H.wait(function() return stats.last ~= nil end, "the answer")
    local s = H.request("pi/getSessionStats", { session = file })
    local msg = table.concat(stats.lines(s), "\n")
    H.truthy(vim.tbl_contains(vim.tbl_map(function(n) return n.msg end, H.notes()), msg), "the message: " .. msg)
    H.truthy(msg:find(("This branch: %d messages"):format(s.branch.totalMessages), 1, true), msg)
    H.truthy(msg:find(("Whole session: %d messages"):format(s.totalMessages), 1, true), msg)
  end },
}
