-- The session picker: pi/listSessions -> vim.ui.select items, forks shown
-- indented under the session they were forked from.
local client = require("pi_sessions.client")
local util = require("pi_sessions.util")

local M = {}

local function short_path(path)
  local home = vim.env.HOME
  if home and home ~= "" and path and (path == home or path:sub(1, #home + 1) == home .. "/") then
    return "~" .. path:sub(#home + 1)
  end
  return path or ""
end

local function title(s)
  local t = (s.name and s.name ~= "") and s.name or (s.firstMessage or "(no messages)")
  t = t:gsub("%s+", " ")
  if vim.fn.strchars(t) > 70 then
    t = vim.fn.strcharpart(t, 0, 69) .. "…"
  end
  return t
end

--- Order sessions so each fork follows the session it came from (depth-first),
--- keeping the server's newest-first order among siblings. Pure.
function M.items(sessions, now)
  local by_path, children, roots = {}, {}, {}
  for _, s in ipairs(sessions) do
    by_path[vim.fs.normalize(s.session)] = s
  end
  for _, s in ipairs(sessions) do
    local parent = s.parentSession and vim.fs.normalize(s.parentSession)
    if parent and by_path[parent] and parent ~= vim.fs.normalize(s.session) then
      children[parent] = children[parent] or {}
      table.insert(children[parent], s)
    else
      table.insert(roots, s)
    end
  end
  local out, seen = {}, {}
  local function walk(s, depth)
    local key = vim.fs.normalize(s.session)
    if seen[key] then
      return -- a parentSession loop: show each session once
    end
    seen[key] = true
    local lead = string.rep("  ", depth) .. (depth > 0 and "↳ " or "")
    local live = require("pi_sessions.render").live(s.live)
    local where = ("%s  ·  %s"):format(short_path(s.cwd), util.relative_time(s.modified, now))
    table.insert(out, {
      info = s,
      depth = depth,
      text = ("%s%s  ·  %s%s"):format(lead, title(s), live and (live .. "  ·  ") or "", where),
    })
    for _, c in ipairs(children[key] or {}) do
      walk(c, depth + 1)
    end
  end
  for _, s in ipairs(roots) do
    walk(s, 0)
  end
  -- sessions only reachable through a loop of parents
  for _, s in ipairs(sessions) do
    walk(s, 0)
  end
  return out
end

--- :PiSessions [words]: pick a session and open its tree.
function M.pick(query, on_choice)
  local params = {}
  if query and query ~= "" then
    params.query = query
  end
  client.request("pi/listSessions", params, function(err, result)
    if err then
      return
    end
    local items = M.items(result.sessions or {})
    if #items == 0 then
      util.info(query and query ~= "" and ("no session matches " .. query) or "no sessions found")
      return
    end
    vim.ui.select(items, {
      prompt = "pi sessions",
      kind = "pi_sessions",
      format_item = function(item) return item.text end,
    }, function(item)
      if not item then
        return
      end
      if on_choice then
        return on_choice(item.info)
      end
      require("pi_sessions.tree").open(item.info.session, { name = item.info.name })
    end)
  end)
end

return M
