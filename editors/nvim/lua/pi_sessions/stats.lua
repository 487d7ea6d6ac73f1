-- The branch's tokens and cost (pi/getSessionStats: pi 1.6.0's
-- get_session_stats plus `branch` for root -> leaf): the sidebar header's
-- short form and :PiStats' message.
local M = {}

--- 950, 1.2k, 12k, 2.5M
function M.compact(n)
  if n < 1000 then
    return tostring(n)
  elseif n < 1000000 then
    return string.format(n < 10000 and "%.1fk" or "%.0fk", n / 1000)
  end
  return string.format("%.1fM", n / 1000000)
end

function M.dollars(cost)
  return string.format((cost > 0 and cost < 0.01) and "$%.4f" or "$%.2f", cost)
end

--- "12k tok $0.42 45%": the branch's tokens and cost and the context share at the leaf.
function M.short(s)
  local parts = { M.compact(s.tokens.total) .. " tok", M.dollars(s.cost) }
  local u = s.contextUsage
  if type(u) == "table" and type(u.percent) == "number" then
    parts[#parts + 1] = string.format("%d%% ctx", math.floor(u.percent + 0.5))
  end
  return table.concat(parts, " ")
end

local function detail(s)
  local t = s.tokens
  return string.format(
    "%d messages (%d user, %d assistant, %d tool results), %d tool calls; %d tokens (%d in, %d out, %d cache read, %d cache write), %s",
    s.totalMessages, s.userMessages, s.assistantMessages, s.toolResults, s.toolCalls,
    t.total, t.input, t.output, t.cacheRead, t.cacheWrite, M.dollars(s.cost))
end

--- :PiStats' lines: the branch, the context at its leaf, the whole file.
function M.lines(s)
  local out = { "This branch: " .. detail(s.branch) }
  local u = s.branch.contextUsage
  if type(u) == "table" and type(u.tokens) == "number" and type(u.percent) == "number" then
    out[#out + 1] = string.format("Context at the leaf: %d of %d tokens (%.1f%%)", u.tokens, u.contextWindow, u.percent)
  end
  out[#out + 1] = "Whole session: " .. detail(s)
  return out
end

--- Fetch the stats at the session's leaf into `sb.stats` and redraw the header.
function M.load(sb, gen)
  sb:request("pi/getSessionStats", { session = sb.session }, function(err, result)
    if err or gen ~= sb.gen or not sb:is_open() then
      return
    end
    sb.stats = result
    require("pi_sessions.tree.draw").header(sb)
  end, { quiet = true })
end

--- :PiStats: the current session's stats as one message.
function M.command()
  local client = require("pi_sessions.client")
  local session = require("pi_sessions.context").current_session()
  if not session then
    return client.notify_error("no session: open one with :PiSessions or :PiTree first")
  end
  client.request("pi/getSessionStats", { session = session }, function(err, result)
    if not err then
      M.last = result
      vim.notify(table.concat(M.lines(result), "\n"), vim.log.levels.INFO)
    end
  end)
end

return M
